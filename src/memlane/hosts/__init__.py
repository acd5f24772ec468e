"""Host adapters: each translates one host protocol into Session/Memory calls."""

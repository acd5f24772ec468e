"""LLM providers behind one protocol (llm/base.py); implementations load lazily."""

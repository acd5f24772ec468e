"""Claude Code's slash-command lines (transcripts/claude_commands.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memlane.transcripts.claude_commands import is_command_output, typed_command

WORDS = st.text(st.characters(blacklist_characters="<>", blacklist_categories=("Cs",)), max_size=30)
NAME = st.from_regex(r"[a-z][a-z0-9:-]{0,15}", fullmatch=True)


@given(NAME, WORDS, st.booleans())
def test_a_command_line_reads_as_the_person_typed_it(
    name: str, args: str, message_first: bool
) -> None:
    tags = [
        f"<command-name>/{name}</command-name>",
        f"<command-message>{name}</command-message>",
        f"<command-args>{args}</command-args>",
    ]
    if message_first:  # some versions write the message tag first
        tags[0], tags[1] = tags[1], tags[0]
    typed = typed_command("\n            ".join(tags))
    assert typed == (f"/{name} {args.strip()}" if args.strip() else f"/{name}")
    assert not is_command_output("\n".join(tags))


@given(st.text(max_size=60))
def test_any_text_reads_without_error_and_words_stay_words(text: str) -> None:
    typed = typed_command(text)
    if "<command-name>" not in text:
        assert typed is None
    is_command_output(text)


def test_words_around_the_tags_keep_the_line_a_prompt() -> None:
    assert typed_command("see <command-name>/x</command-name> here") is None
    assert is_command_output("<local-command-stdout>Total cost: $0.01</local-command-stdout>")
    assert is_command_output("\n<local-command-stderr>oops</local-command-stderr>\n")
    assert not is_command_output("the <local-command-stdout>x</local-command-stdout> said")
    assert not is_command_output("")


def test_a_shell_line_reads_as_typed_and_its_output_is_the_harness() -> None:
    assert typed_command("<bash-input>git status</bash-input>") == "!git status"
    assert typed_command("\n<bash-input> ls -la </bash-input>\n") == "!ls -la"
    assert typed_command("ran <bash-input>ls</bash-input> then") is None
    assert not is_command_output("<bash-input>git status</bash-input>")
    assert is_command_output("<bash-stdout>On branch main</bash-stdout>")
    assert is_command_output("<bash-stderr>fatal: not a repo</bash-stderr>")
    # stdout and stderr come together in one line
    assert is_command_output("<bash-stdout>On branch main</bash-stdout><bash-stderr></bash-stderr>")
    assert is_command_output(
        "<local-command-stdout>done</local-command-stdout>\n"
        "<local-command-stderr>warn</local-command-stderr>"
    )
    assert not is_command_output("<bash-stdout>x</bash-stdout> and then I said hello")


@given(WORDS, WORDS)
def test_any_shell_output_pair_is_the_harness(stdout: str, stderr: str) -> None:
    assert is_command_output(
        f"<bash-stdout>{stdout}</bash-stdout><bash-stderr>{stderr}</bash-stderr>"
    )

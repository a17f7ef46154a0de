"""A tmux session inside the sandbox: start it, send keys, wait, read the pane.

Only talks to tmux; installing tmux lives in `rsr.harness.tmux_install`.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass
from typing import Literal

from inspect_ai.util import SandboxEnvironment

from rsr.errors import RsrError
from rsr.harness.channel import ShellChannel

# tmux's client->server message is capped (~16 KiB); a UTF-8 char can take 4 bytes.
SEND_CHUNK_CHARS = 3000
POLL_SECONDS = 0.1
# Above this, keystrokes are typed one chunk per exec (an argv string is capped at 128 KiB).
ONE_EXEC_MAX_CHARS = 60_000

# The reference hands a keystroke string to `tmux send-keys` as one argument while its quoted
# form fits tmux's command (this many bytes, less the command prefix); longer ones are pasted.
REFERENCE_COMMAND_BYTES = 16_000
REFERENCE_SEND_PREFIX = "tmux send-keys -t terminus-2 --"


class TmuxError(RsrError):
    """The tmux session could not be driven (the message says what failed)."""


@dataclass(frozen=True)
class WaitResult:
    waited: float
    """Seconds actually waited."""
    idle: bool
    """The shell was idle again before the deadline (adaptive mode only)."""


def escape_literal(chunk: str) -> str:
    """tmux strips a trailing `;` from an argument (command separator); `\\;` yields `;`."""
    return chunk[:-1] + "\\;" if chunk.endswith(";") else chunk


def tmux_separator_rule(keystrokes: str) -> str:
    """What tmux makes of one argument's trailing `;` (a command separator) and `\\;` (a `;`)."""
    if keystrokes.endswith("\\;"):
        return keystrokes[:-2] + ";"
    if keystrokes.endswith(";"):
        return keystrokes[:-1]
    return keystrokes


def fits_one_argument(keystrokes: str) -> bool:
    """True when the reference sends `keystrokes` as one `send-keys` argument (else it pastes
    them, literally)."""
    quoted = len(shlex.quote(keystrokes).encode())
    return quoted <= REFERENCE_COMMAND_BYTES - len(REFERENCE_SEND_PREFIX) - 1


class TmuxSession:
    """One tmux session running a login bash in the sandbox."""

    def __init__(
        self,
        sbx: SandboxEnvironment,
        name: str = "rsr",
        width: int = 160,
        height: int = 40,
        history_limit: int = 10_000_000,
        cwd: str | None = None,
        user: str | None = None,
        history_before_start: bool = False,
        literal_semicolons: bool = False,
    ) -> None:
        self.sbx = sbx
        self.name = name
        self.width = width
        self.height = height
        self.history_limit = history_limit
        # False reproduces the reference: history-limit is set once the pane exists, so the
        # pane keeps tmux's default 2,000 lines (see `start`). True applies it to the pane.
        self.history_before_start = history_before_start
        # False reproduces the reference: tmux reads a keystroke string's trailing `;` as a
        # command separator, so the shell never sees it. True types it.
        self.literal_semicolons = literal_semicolons
        self._previous_buffer: str | None = None
        self._fell_back = True
        self.cwd = cwd
        self.user = user
        # Absolute pane line (history + cursor row) and its text at the last read.
        self._mark: tuple[int, str] | None = None
        self._shell_pid: str | None = None
        # tmux is driven through one persistent shell: a turn costs one round trip, not an exec.
        self._channel = ShellChannel(sbx, user)

    async def _tmux(self, *args: str, input: str | None = None, timeout: int = 30) -> str:
        if input is not None:
            result = await self.sbx.exec(["tmux", *args], input=input, user=self.user, timeout=timeout)
        else:
            result = await self._channel.run(shlex.join(["tmux", *args]), timeout=timeout)
        if not result.success:
            raise TmuxError(f"tmux {args[0]} failed (exit {result.returncode}): "
                            f"{result.stderr.strip()}")
        return result.stdout

    async def _sh(self, script: str, timeout: int = 30) -> str:
        result = await self._channel.run(script, timeout=timeout)
        if not result.success:
            raise TmuxError(f"tmux script failed (exit {result.returncode}): "
                            f"{result.stderr.strip()}")
        return result.stdout

    async def start(self) -> None:
        # A session left by an earlier run in the same sandbox is replaced, not joined.
        await self._sh(f"tmux kill-session -t {self.name} 2>/dev/null; true")
        # The session is started as the reference starts it: one `bash -c` exec, not through the
        # channel, so the agent's shell inherits neither the channel's environment (its token)
        # nor an extra shell level (SHLVL is 1, as under the reference).
        new = (f"tmux {{conf}}new-session -x {self.width} -y {self.height} -d -s {self.name} "
               "'bash --login'")
        script = "export TERM=xterm-256color && export SHELL=/bin/bash && "
        if self.history_before_start:
            conf = f"/tmp/{self.name}.tmux.conf"
            script += (f"printf 'set -g history-limit {self.history_limit}\\n' > {conf} && "
                       + new.format(conf=f"-f {conf} "))
        else:
            script += new.format(conf="")
        result = await self.sbx.exec(["bash", "-c", script], cwd=self.cwd, user=self.user,
                                     timeout=30)
        if not result.success:
            raise TmuxError(f"tmux new-session failed (exit {result.returncode}): "
                            f"{result.stderr.strip()}")
        if not self.history_before_start:
            # As the reference does: the option is set after the session (and its only pane)
            # exists, and tmux applies history-limit to panes created later only.
            await self._sh(f"tmux set-option -g history-limit {self.history_limit}")
        self._shell_pid = (await self._tmux("display-message", "-p", "-t", self.name,
                                            "#{pane_pid}")).strip()
        await self.wait(5.0, adaptive=True)
        # On a loaded machine the login shell can look idle before it has drawn its prompt; the
        # first observation must show the prompt, as it does under the reference.
        deadline = time.monotonic() + 10
        while not (await self.capture_pane()).strip() and time.monotonic() < deadline:
            await _sleep(POLL_SECONDS)
        self._mark = None
        self._previous_buffer = None

    async def alive(self) -> bool:
        result = await self._channel.run(shlex.join(["tmux", "has-session", "-t", self.name]))
        return result.success

    async def close(self) -> None:
        """Stop the persistent shell (the tmux session itself stays)."""
        await self._channel.close()

    def _send_script(self, keystrokes: str) -> str:
        """Shell lines that type `keystrokes` (at most ONE_EXEC_MAX_CHARS of them).

        A short string goes to `send-keys` as one argument, as the reference sends it, and tmux
        decides whether it names a key (`C-c`, `^C`, `enter`, `KP1`, `0x41`; a string with a
        trailing newline or space names none): rsr keeps no key table of its own. A longer one
        cannot name a key and is typed literally, in chunks.
        """
        if len(keystrokes) <= SEND_CHUNK_CHARS:
            arg = escape_literal(keystrokes) if self.literal_semicolons else keystrokes
            return f"tmux send-keys -t {self.name} -- {shlex.quote(arg)}"
        return self._literal_script(self._long_text(keystrokes))

    def _long_text(self, keystrokes: str) -> str:
        """The characters a long keystroke string types: the reference sends it as one argument
        while it fits tmux's command (whose trailing `;` tmux then eats), else pastes it."""
        if not self.literal_semicolons and fits_one_argument(keystrokes):
            return tmux_separator_rule(keystrokes)
        return keystrokes

    def _literal_script(self, text: str) -> str:
        return " && ".join(
            f"tmux send-keys -t {self.name} -l -- "
            + shlex.quote(escape_literal(text[start : start + SEND_CHUNK_CHARS]))
            for start in range(0, len(text), SEND_CHUNK_CHARS))

    def _idle_script(self, seconds: float) -> str:
        polls = max(1, int(seconds / POLL_SECONDS))
        pid = self._shell_pid or "0"
        return (
            f"i=0; prev=; while [ $i -lt {polls} ]; do sleep {POLL_SECONDS}; i=$((i+1)); "
            f"set -- $(cut -d' ' -f3,8 /proc/{pid}/stat 2>/dev/null); "
            f'if [ "$1" = S ] && [ "$2" = {pid} ]; then '
            f"snap=$(tmux capture-pane -p -t {self.name} | cksum); "
            f'if [ "$snap" = "$prev" ]; then echo idle; exit 0; fi; prev=$snap; '
            f"else prev=; fi; done; echo busy"
        )

    async def send_keys(self, keystrokes: str) -> None:
        """Send keystrokes as the reference does (see `_send_script`)."""
        if len(keystrokes) > ONE_EXEC_MAX_CHARS:
            text = self._long_text(keystrokes)
            for start in range(0, len(text), SEND_CHUNK_CHARS):
                await self._sh(self._literal_script(text[start : start + SEND_CHUNK_CHARS]))
        elif keystrokes:
            await self._sh(self._send_script(keystrokes))

    async def wait(self, seconds: float, adaptive: bool) -> WaitResult:
        """Wait `seconds`; in adaptive mode return as soon as the shell is idle again."""
        return await self.send_and_wait("", seconds, adaptive)

    async def send_and_wait(self, keystrokes: str, seconds: float, adaptive: bool) -> WaitResult:
        """Type `keystrokes`, then wait `seconds`, or in adaptive mode until the shell is idle.

        Idle = the login shell owns the terminal's foreground, is sleeping on input, and the
        screen did not change between two polls. Adaptive waiting polls inside the sandbox, in
        the same exec that types the keys, so a command costs one round trip.
        """
        began = time.monotonic()
        if not adaptive or seconds <= 0:
            await self.send_keys(keystrokes)
            if seconds > 0:
                await _sleep(seconds)
            return WaitResult(time.monotonic() - began, False)
        script = self._idle_script(seconds)
        if len(keystrokes) > ONE_EXEC_MAX_CHARS:
            await self.send_keys(keystrokes)
        elif keystrokes:
            script = f"{self._send_script(keystrokes)} || exit 1; {script}"
        out = await self._sh(script, timeout=int(seconds) + 30)
        return WaitResult(time.monotonic() - began, out.strip() == "idle")

    async def screen(self) -> str:
        """The visible screen."""
        return _strip_trailing_blank(await self._tmux("capture-pane", "-p", "-J", "-t", self.name))

    async def capture_pane(self, entire: bool = False) -> str:
        """The pane as the reference reads it: not joined, blank rows kept; the whole history
        with `entire`. A failed capture (the session is gone) reads as empty text."""
        args = ["capture-pane", "-p", *(["-S", "-"] if entire else []), "-t", self.name]
        result = await self._channel.run(shlex.join(["tmux", *args]), timeout=30)
        return result.stdout if result.success else ""

    async def incremental_output(self) -> tuple[Literal["screen", "new"], str]:
        """What the reference shows after a turn: ("new", output since the last call) or
        ("screen", the visible screen) when that cannot be told.

        The rule, kept with its quirks: the previous whole-history capture, stripped, must
        occur in the current one; the new output then starts at the *offset of the last line
        break within the previous capture*, applied to the current capture (which coincides
        with the previous last line only while the history has not scrolled past its limit).
        """
        current = await self.capture_pane(entire=True)
        previous = self._previous_buffer
        self._previous_buffer = current
        if previous is None:
            return "screen", await self.capture_pane()
        stripped = previous.strip()
        if stripped in current:
            start = stripped.rfind("\n") if "\n" in stripped else current.index(stripped)
            new = current[start:]
            if new.strip():
                return "new", new
        return "screen", await self.capture_pane()

    async def read_since_mark(self) -> tuple[Literal["screen", "new"], str]:
        """`read_new` (the corrected rule) with the kind the reference frames it by."""
        before = self._mark
        text = await self.read_new()
        return ("new" if before is not None and self._fell_back is False else "screen"), text

    async def read_new(self) -> str:
        """Terminal output since the last read, starting at the line the cursor was on.

        Falls back to the visible screen when the history no longer lines up with the last
        read (the screen was cleared, history overflowed, a full-screen program ran).
        One request: position, cursor line, screen and the since-mark capture come back together.
        """
        mark_line = self._mark[0] if self._mark is not None else -1
        sep = "@@rsr-section@@"
        t = self.name
        # Two tmux client calls: the position, then every capture chained with `\;` (each
        # client start costs a few milliseconds; the separators come from display-message).
        cursor_and_screen = (f'tmux capture-pane -p -J -t {t} -S "$2" -E "$2" \\; display-message -p -t {t} {sep} '
                             f"\\; capture-pane -p -J -t {t} \\; display-message -p -t {t} {sep}")
        script = (
            f"set -- $(tmux display-message -p -t {t} "
            f"'#{{history_size}} #{{cursor_y}} #{{alternate_on}}') || exit 1; "
            f'echo "$1 $2 $3"; echo {sep}; '
            f'if [ {mark_line} -ge 0 ] && [ "$3" != 1 ]; then '
            f"s=$(({mark_line} - $1)); "
            f"{cursor_and_screen} \\; capture-pane -p -J -t {t} -S $s -E -; "
            f"else {cursor_and_screen}; fi"
        )
        info, cursor_line, screen, since = (await self._sh(script)).split(sep + "\n")
        history, cursor, _alternate = info.split()
        text: str | None = None
        if self._mark is not None and since:
            first = since.split("\n", 1)[0]
            mark_text = self._mark[1]
            if mark_text.strip() == "" or first.startswith(mark_text.rstrip()):
                text = _strip_trailing_blank(since)
        self._fell_back = text is None
        if text is None:
            text = _strip_trailing_blank(screen)
        self._mark = (int(history) + int(cursor), cursor_line.rstrip("\n"))
        return text


def _strip_trailing_blank(text: str) -> str:
    return text.rstrip() + "\n" if text.strip() else ""


async def _sleep(seconds: float) -> None:
    import anyio

    await anyio.sleep(seconds)

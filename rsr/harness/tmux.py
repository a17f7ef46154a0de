"""A tmux session inside the sandbox: start it, send keys, wait, read the pane.

Only talks to tmux; installing tmux lives in `rsr.harness.tmux_install`.
"""

from __future__ import annotations

import re
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

# Whole-string keystrokes that name a tmux key (C-c, M-x, Enter, Up, F5, ...).
_KEY_NAME = re.compile(
    r"^(?:[CMS]-)+(?:[A-Za-z0-9\[\]\\@^_ ]|Space|Enter|Tab|Escape|BSpace|Up|Down|Left|Right)$"
    r"|^(?:Enter|Escape|Tab|BTab|BSpace|Space|Up|Down|Left|Right|Home|End|PageUp|PageDown"
    r"|PPage|NPage|DC|IC|F(?:[1-9]|1[0-2]))$"
)


class TmuxError(RsrError):
    """The tmux session could not be driven (the message says what failed)."""


@dataclass(frozen=True)
class WaitResult:
    waited: float
    """Seconds actually waited."""
    idle: bool
    """The shell was idle again before the deadline (adaptive mode only)."""


def is_key_name(keystrokes: str) -> bool:
    """True when the whole keystroke string is one tmux key name, e.g. `C-c` or `Enter`."""
    return bool(_KEY_NAME.match(keystrokes.strip())) and keystrokes.strip() != ""


def escape_literal(chunk: str) -> str:
    """tmux strips a trailing `;` from an argument (command separator); `\\;` yields `;`."""
    return chunk[:-1] + "\\;" if chunk.endswith(";") else chunk


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
    ) -> None:
        self.sbx = sbx
        self.name = name
        self.width = width
        self.height = height
        self.history_limit = history_limit
        # False reproduces the reference: history-limit is set once the pane exists, so the
        # pane keeps tmux's default 2,000 lines (see `start`). True applies it to the pane.
        self.history_before_start = history_before_start
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
        cwd = f"-c {shlex.quote(self.cwd)} " if self.cwd else ""
        new = (f"tmux {{conf}}new-session -d -s {self.name} -x {self.width} -y {self.height} "
               f"{cwd}'bash --login'")
        # A session left by an earlier run in the same sandbox is replaced, not joined.
        prelude = (f"tmux kill-session -t {self.name} 2>/dev/null; "
                   "export TERM=xterm-256color SHELL=/bin/bash; ")
        if self.history_before_start:
            conf = f"/tmp/{self.name}.tmux.conf"
            await self._sh(f"{prelude}printf 'set -g history-limit {self.history_limit}\\n' "
                           f"> {conf} && " + new.format(conf=f"-f {conf} "))
        else:
            # As the reference does: the option is set after the session (and its only pane)
            # exists, and tmux applies history-limit to panes created later only.
            await self._sh(prelude + new.format(conf=""))
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
        """Shell lines that type `keystrokes`: one tmux key name, or literal text in chunks."""
        if is_key_name(keystrokes):
            return f"tmux send-keys -t {self.name} {shlex.quote(keystrokes.strip())}"
        return " && ".join(
            f"tmux send-keys -t {self.name} -l -- "
            + shlex.quote(escape_literal(keystrokes[start : start + SEND_CHUNK_CHARS]))
            for start in range(0, len(keystrokes), SEND_CHUNK_CHARS))

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
        """Send keystrokes verbatim; a whole-string tmux key name (C-c, Enter) is sent as that key."""
        if len(keystrokes) > ONE_EXEC_MAX_CHARS:
            for start in range(0, len(keystrokes), SEND_CHUNK_CHARS):
                await self._sh(self._send_script(keystrokes[start : start + SEND_CHUNK_CHARS]))
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

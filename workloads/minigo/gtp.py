"""GNU Go through GTP (the Go Text Protocol, version 2): the mini's evaluation opponent and the
referee of the scoring test.

One `GnuGo` is one `gnugo --mode gtp` process and one board. Moves cross as GTP vertices
("C3", "pass"); pgx's action `a` is row `a // N`, column `a % N` with row 0 at the top, so its
vertex is column letter (A.., skipping I) and row number `N - a // N`. GNU Go plays with
Chinese (area) rules and `--capture-all-dead`, so that a finished game's board holds no dead
stones and its `final_score` is the area count pgx's Tromp-Taylor rules give.
"""

from __future__ import annotations

import shutil
import subprocess

from tpubench.errors import UsageError

COLUMNS = "ABCDEFGHJKLMNOPQRST"
FALLBACK = "/usr/games/gnugo"  # where Debian's package puts it (not on a non-login PATH)
PACKAGE_HINT = ("GNU Go is the MiniGo mini's evaluation opponent: install the Debian/Ubuntu "
                "package `gnugo` (`apt-get install -y gnugo`; it installs /usr/games/gnugo) or "
                "put a `gnugo` binary on PATH, or evaluate against a model instead "
                "(--config.eval.opponent=model).")


class GtpError(RuntimeError):
    """GNU Go answered a command with `?` (an error), or the process died."""


class IllegalEngineMove(UsageError):
    """The engine played a move our rules refuse (it would desynchronise the two boards)."""


def find_gnugo() -> str:
    """The gnugo binary's path; `UsageError` naming the package when it is missing."""
    path = shutil.which("gnugo") or shutil.which(FALLBACK)
    if path is None:
        raise UsageError("`gnugo` was not found on PATH nor at /usr/games/gnugo. " + PACKAGE_HINT)
    return path


def vertex(action: int, board_size: int) -> str:
    """pgx action -> GTP vertex."""
    if action == board_size * board_size:
        return "pass"
    row, col = divmod(int(action), board_size)
    return f"{COLUMNS[col]}{board_size - row}"


def action(vertex_text: str, board_size: int) -> int:
    """GTP vertex -> pgx action ("pass" -> N*N)."""
    v = vertex_text.strip().upper()
    if v == "PASS":
        return board_size * board_size
    col = COLUMNS.find(v[:1]) if v else -1
    row = int(v[1:]) if v[1:].isdigit() else 0
    if not (0 <= col < board_size and 1 <= row <= board_size):
        raise IllegalEngineMove(
            f"the GTP engine answered {vertex_text!r}, not a vertex of a {board_size}x"
            f"{board_size} board (A1..{COLUMNS[board_size - 1]}{board_size}, pass). Check that "
            "the program on PATH as `gnugo` is GNU Go (`gnugo --version`).")
    return (board_size - row) * board_size + col


class GnuGo:
    """One GNU Go process speaking GTP on one board."""

    def __init__(self, board_size: int, komi: float, level: int = 0, seed: int = 0):
        self.board_size = board_size
        self._proc = subprocess.Popen(
            [find_gnugo(), "--mode", "gtp", "--level", str(level), "--chinese-rules",
             "--capture-all-dead", "--seed", str(seed)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.command(f"boardsize {board_size}")
        self.command(f"komi {komi}")
        self.command("clear_board")

    def command(self, text: str) -> str:
        """Send one GTP command; its answer without the `= `; `GtpError` on `? ...`."""
        if self._proc.poll() is not None:
            raise GtpError(f"gnugo exited (status {self._proc.returncode}) before {text!r}")
        self._proc.stdin.write(text + "\n")
        self._proc.stdin.flush()
        lines = []
        while True:
            line = self._proc.stdout.readline()
            if line == "":
                raise GtpError(f"gnugo closed its output after {text!r}")
            if line.strip() == "" and lines:
                break
            if line.strip():
                lines.append(line.rstrip("\n"))
        answer = "\n".join(lines)
        if answer.startswith("?"):
            raise GtpError(f"gnugo refused {text!r}: {answer[1:].strip()}")
        return answer[1:].strip()

    def clear(self) -> None:
        self.command("clear_board")

    def play(self, color: str, act: int) -> None:
        """Tell the engine our move (`color`: "black" | "white")."""
        self.command(f"play {color} {vertex(act, self.board_size)}")

    def genmove(self, color: str) -> int:
        """The engine's move for `color`, as a pgx action (resignation -> pass)."""
        answer = self.command(f"genmove {color}")
        if answer.lower() == "resign":
            return self.board_size * self.board_size
        return action(answer, self.board_size)

    def final_score(self) -> float:
        """GNU Go's score, black's margin (positive: black wins), "0" -> 0.0."""
        text = self.command("final_score")
        if text == "0":
            return 0.0
        sign = 1.0 if text[0] == "B" else -1.0
        return sign * float(text[2:])

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                self._proc.stdin.write("quit\n")
                self._proc.stdin.flush()
                self._proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()

    def __enter__(self) -> GnuGo:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

"""The parts of `--help` every command shares: the workloads (from the registry), examples, and
an argparse formatter that shows each flag's default. Importing this module imports no JAX, so
`--help` answers at once."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable

from tpubench import registry
from tpubench.errors import UsageError

WIDTH = 96


class Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's help layout, keeping the description's and epilog's own line breaks (one
    example per line) and ending each optional flag's help with its default when it has one
    worth showing (not None, False or "")."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if ("%(default)" not in text and action.option_strings and not action.required
                and action.default not in (None, False, "", argparse.SUPPRESS)):
            text += " (default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    """argparse with `Formatter`, whose errors are a `UsageError` (one paragraph naming the
    usage, exit status 2 from the command's main) instead of argparse's usage dump."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        usage = " ".join(self.format_usage().split()).removeprefix("usage: ")
        raise UsageError(f"{message[0].upper()}{message[1:]}. Usage: {usage} (--help for more).")


def workloads(served_only: bool = False) -> str:
    """One paragraph naming the registered workloads (or only those `tpubench infer` serves)."""
    names = registry.served() if served_only else registry.names()
    what = "Workloads served by `tpubench infer`" if served_only else "Workloads"
    return textwrap.fill(f"{what}: {', '.join(names)}. `tpubench list` shows each one's configs "
                         "and quality targets.", WIDTH)


def epilog(*examples: str, served_only: bool = False, with_workloads: bool = True) -> str:
    """The text after a command's flags: the workloads paragraph, then one example a line."""
    parts = [workloads(served_only)] if with_workloads else []
    parts.append("Examples:\n" + "\n".join(f"  {e}" for e in examples))
    return "\n\n".join(parts)


def paragraph(text: str) -> str:
    """`text` wrapped to the help's width (descriptions keep their own breaks otherwise)."""
    return textwrap.fill(" ".join(text.split()), WIDTH)


def rows(pairs: list[tuple[str, str]]) -> str:
    """`  FLAG  help` rows, the help wrapped in a column after the widest flag (up to 30)."""
    width = min(30, max(len(flag) for flag, _ in pairs))
    lines = []
    for flag, text in pairs:
        lead = f"  {flag:<{width}}  "
        if len(lead) > width + 4:  # a flag wider than the column: its help on the next line
            lines.append(f"  {flag}")
            lead = " " * (width + 4)
        lines.append(textwrap.fill(" ".join(text.split()), WIDTH, initial_indent=lead,
                                   subsequent_indent=" " * (width + 4)))
    return "\n".join(lines)


def absl_flags(define: Callable[..., None], metavars: dict[str, str]) -> list[tuple[str, str]]:
    """(`--NAME=METAVAR`, help with its default) of each absl flag that `define(flag_values)`
    defines: the help of `tpubench run` and the absl mains, from the flags themselves."""
    from absl import flags

    fv = flags.FlagValues()
    define(fv)
    pairs = []
    for name in fv:
        flag = fv[name]
        text = flag.help + (f" (default: {flag.default})" if flag.default is not None else "")
        pairs.append((f"--{name}={metavars.get(name, 'VALUE')}", text))
    return pairs


OVERRIDE_ROW = ("--config.SECTION.KEY=VALUE",
                "override one config key (ml_collections.config_flags rules; an unknown key is "
                "refused), e.g. --config.data.global_batch_size=64 or --config.run.seed 3; an "
                "override that changes an MLPerf benchmark makes the run open division")

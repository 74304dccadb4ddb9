"""The conformance kit: language-neutral vectors exported from the living spec, a JSON Lines
protocol, a runner for other implementations, and histtrim behind that protocol.

Nothing here is imported by `histtrim` itself; exporting needs the source checkout."""

from .codec import ProtocolError
from .export import MissingRules, build, export, render
from .reference import FUNCTION_RULES, FUNCTIONS, evaluate
from .report import RuleTally, junit, tally, text_report
from .runner import Outcome, judge, run, same
from .serve import answer, serve
from .vectors import Vector, load, patterns, select
from .vectorset import VectorSet

__all__ = [
    "FUNCTIONS",
    "FUNCTION_RULES",
    "MissingRules",
    "Outcome",
    "ProtocolError",
    "RuleTally",
    "Vector",
    "VectorSet",
    "answer",
    "build",
    "evaluate",
    "export",
    "judge",
    "junit",
    "load",
    "patterns",
    "render",
    "run",
    "same",
    "select",
    "serve",
    "tally",
    "text_report",
]

"""Options that name Python code by import path ('package.module:function'): the one loader, whose errors say
where the module must be importable (each Spark process imports it itself: a function cannot travel as a
string option)."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import OptionError
from ..formats.user_modules import WHERE, import_user_module


def load_reference(reference: str, option: str) -> Callable[..., object]:
    """The object 'module:name' (`name` may be dotted: 'module:Class.method') names; every error names the option,
    the reference and the cause."""
    module_name, colon, name = reference.strip().partition(":")
    if not colon or not module_name.strip() or not name.strip():
        raise OptionError(f"option '{option}': '{reference}' is not 'package.module:function'")
    try:
        found: object = import_user_module(module_name.strip())
        for part in name.strip().split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError, ValueError) as e:
        raise OptionError(f"option '{option}': cannot load '{reference}' ({type(e).__name__}: {e}); {WHERE}") from None
    if not callable(found):
        raise OptionError(f"option '{option}': '{reference}' is not a function (a {type(found).__name__})")
    return found

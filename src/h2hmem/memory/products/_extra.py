"""The product's optional extra: a one-line error when it is missing, its installed version."""

from __future__ import annotations

import importlib.util
from importlib.metadata import PackageNotFoundError, version


class ProductMissingError(ImportError):
    """The product's distribution is not installed; the message names the extra that installs it."""


def require_product(module: str, distribution: str, extra: str) -> None:
    """Check that ``module`` of ``distribution`` is installed, without importing it (a product may
    read its telemetry switch when first imported: the adapter sets it first), or say, in one line,
    which extra installs it.

    Raises:
        ProductMissingError: ``pip install 'h2hmem[<extra>]'`` installs the product.
    """
    if importlib.util.find_spec(module) is None:
        raise ProductMissingError(
            f"memory method {extra!r} needs {distribution}, which is not installed; "
            f"install it with: pip install 'h2hmem[{extra}]'"
        )


def product_version(distribution: str) -> str | None:
    """The installed version of ``distribution`` (from its metadata), or None when it is not installed."""
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None

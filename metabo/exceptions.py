"""Exception hierarchy of metabo.

One root, :class:`MetaboError`; each subclass also inherits the built-in exception a
caller would naturally catch (the ConfigSpace habit), so ``except ValueError`` keeps
working for input errors.
"""

from __future__ import annotations


class MetaboError(Exception):
    """Root of every error raised by metabo."""


class InputDataError(MetaboError, ValueError):
    """Input that cannot be used as given: malformed values, NaN errors, bad JSON."""


class UnknownDatasetError(MetaboError, KeyError):
    """A dataset name or id that the knowledge base (or a loader) does not know."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable.
        return str(self.args[0]) if self.args else ""


class UnknownAlgorithmError(MetaboError, KeyError):
    """An algorithm name that is not registered."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class DataQualityError(MetaboError, ValueError):
    """A dataset carries a quality flag (e.g. lost decimal points) that forbids its use."""


class KnowledgeBaseError(MetaboError, RuntimeError):
    """The store failed: a DuckDB error, a corrupt file, an impossible migration."""


class SchemaVersionError(KnowledgeBaseError):
    """The store's schema is newer than this version of metabo understands."""


class FetchError(MetaboError, RuntimeError):
    """Downloading or reading an external source (a wheel, an OpenML response) failed."""


class OpenMLResponseError(FetchError):
    """An OpenML server answered with something that is not a valid response."""


class InvalidConfigurationError(MetaboError, ValueError):
    """A configuration outside its search space: an unknown, missing, inactive or
    out-of-range hyperparameter (the message names it)."""


class EvaluationError(MetaboError, RuntimeError):
    """Evaluating a configuration failed in a way that is not a property of the
    configuration (e.g. a worker process died without reporting)."""


class BackendError(MetaboError, RuntimeError):
    """A parallel backend cannot be used: its package is missing or its cluster unreachable."""


class SurrogateError(MetaboError, RuntimeError):
    """A surrogate model cannot be fitted or used: a covariance matrix that stays
    singular with the largest jitter, or a prediction asked before ``fit`` (malformed
    inputs are :class:`InputDataError`)."""


class OutputFileError(MetaboError, OSError):
    """Writing a file the user asked for (a model, predictions) failed, e.g. a full disk;
    nothing half-written is left at the path."""


class TimeBudgetExceeded(MetaboError, TimeoutError):
    """A time budget ran out during work that no trial limit bounds (loading the data,
    the meta-features, choosing the strategy, the final fit): the work was stopped."""

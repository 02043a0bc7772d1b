"""Request and response bodies of the service (pydantic; the library itself uses
frozen dataclasses, pydantic lives at this edge only).

Every request model forbids unknown fields. Numbers must be finite and at most
:data:`MAX_MAGNITUDE` in absolute value: Python's ``json`` (and so the server) parses the
non-standard literals ``NaN`` and ``Infinity``, so each float field refuses them
explicitly (``allow_inf_nan=False``), and a value like 1e308 overflows the distances and
sums computed from it; an undefined value is ``null`` where one is allowed. An integer
field takes a JSON number without a fraction (``1`` or ``1.0``, as JSON Schema's
``integer``), never a string or a boolean. Names (meta-features, algorithms,
hyperparameters) are of the character set :data:`NAME_PATTERN`: no control characters,
no NUL. Hyperparameter values are JSON scalars only (bool, int, finite float, string),
matched strictly: ``"5"`` stays a string and ``1`` an integer. A failed outcome (status
crash, timeout, memout) carries no value.
Nothing a client sends is unpickled or evaluated: uploaded data are CSV or Parquet bytes
read by the project's file loaders, spaces are ConfigSpace's JSON.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt, StrictStr, model_validator

from metabo.kb.schema import RUN_STATUSES, check_outcome
from metabo.strategies.names import AUTO, COLD_STRATEGIES, WARM_STRATEGIES

#: The largest magnitude of a number in a request (module docstring).
MAX_MAGNITUDE = 1e15


def _integral(value: Any) -> Any:
    """``1.0`` as ``1`` (JSON Schema's ``integer``); anything else as it came, for the strict check."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: A finite float (an integer is accepted as one; NaN/inf and numeric strings are not).
Finite = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE)]
NonNegative = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, le=MAX_MAGNITUDE)]
Positive = Annotated[float, Field(strict=True, allow_inf_nan=False, gt=0, le=MAX_MAGNITUDE)]
#: An integer: a JSON number without a fraction (module docstring).
Integer = Annotated[int, BeforeValidator(_integral), Field(strict=True, ge=-(2**63) + 1, le=2**63 - 1)]
Count = Annotated[int, BeforeValidator(_integral), Field(strict=True, ge=0, le=2**31 - 1)]
#: A hyperparameter value: a JSON scalar (module docstring).
Value = StrictBool | StrictInt | Finite | StrictStr
#: The character set of a name: letters, digits and ``_ . : -`` (no space, control character or NUL).
NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}$"
Name = Annotated[str, Field(min_length=1, max_length=200, pattern=NAME_PATTERN)]
#: A column name of uploaded data: printable text.
Column = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")]


def _keyed_by_names(schema: dict[str, Any]) -> None:
    """A mapping keyed by :data:`Name`, as JSON Schema says it: every key of the pattern
    (pydantic writes ``patternProperties``, which lets other keys through)."""
    ((pattern, value),) = schema.pop("patternProperties").items()
    schema["additionalProperties"] = value
    schema["propertyNames"] = {"pattern": pattern, "minLength": 1, "maxLength": 200}


Params = Annotated[dict[Name, Value], Field(max_length=500, json_schema_extra=_keyed_by_names)]
#: Meta-feature name -> value; null for a quantity undefined on the dataset.
MetaFeatures = Annotated[dict[Name, Finite | None],
                         Field(min_length=1, max_length=5000, json_schema_extra=_keyed_by_names)]
#: A failed outcome: it carries no value.
FAILED = tuple(s for s in RUN_STATUSES if s != "ok")
#: A class probability and a class index of predictions, as the schema states them
#: (:class:`TellIn` checks them with messages naming the row).
Probability = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE,
                                     json_schema_extra={"minimum": 0, "maximum": 1})]
ClassIndex = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE,
                                    json_schema_extra={"type": "integer", "minimum": 0, "maximum": MAX_MAGNITUDE})]


def _outcome_rule(fields: tuple[str, ...]) -> dict[str, Any]:
    """JSON Schema of an outcome's rule: status ``ok`` (the default) with a number
    ``value``, or a failed status with none of ``fields``."""
    return {"anyOf": [
        {"properties": {"status": {"const": "ok"}, "value": {"type": "number"}}, "required": ["value"]},
        {"properties": {"status": {"enum": list(FAILED)}, **{f: {"type": "null"} for f in fields}},
         "required": ["status"]},
    ]}
Identifier = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$")]
#: The forms of a study id and a metric name, in bodies and in paths / queries alike.
STUDY_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"
METRIC_PATTERN = r"^[A-Za-z][A-Za-z0-9_]{0,99}$"
StudyId = Annotated[str, Field(pattern=STUDY_ID_PATTERN)]
Metric = Annotated[str, Field(pattern=METRIC_PATTERN)]
Status = Literal["ok", "crash", "timeout", "memout"]
StrategyName = Literal[(AUTO, *WARM_STRATEGIES, *COLD_STRATEGIES)]  # type: ignore[valid-type]
#: Uploaded data as base64 text: at most 64 MiB of CSV or Parquet.
MAX_UPLOAD_CHARS = 64 * 1024 * 1024 * 4 // 3 + 4
#: Standard base64 (RFC 4648, padded), as :func:`base64.b64decode` with ``validate=True`` reads it.
BASE64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
assert set(Status.__args__) == set(RUN_STATUSES)  # type: ignore[attr-defined]


class Body(BaseModel):
    """A request body: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")


# ------------------------------------------------------------------ datasets
class DatasetIn(Body):
    """A dataset described by its meta-features (names as the knowledge base stores them,
    e.g. OpenML's NumberOfInstances, ClassEntropy, and the SCoT set)."""

    name: Identifier
    meta_features: MetaFeatures


class UploadIn(Body):
    """A dataset sent as CSV or Parquet bytes (base64), its meta-features computed here."""

    name: Identifier
    format: Literal["csv", "parquet"]
    content_base64: Annotated[str, Field(min_length=4, max_length=MAX_UPLOAD_CHARS, pattern=BASE64_PATTERN)]
    target: Column
    landmarkers: bool = Field(True, description="also the landmarker meta-features (trains small models)")
    seed: Count = 0


class DatasetOut(BaseModel):
    dataset_id: str
    n_meta_features: int


# ------------------------------------------------------------------ studies
class SpaceIn(Body, json_schema_extra={"not": {
        "properties": {"algorithms": {"type": "array"}, "configspace": {"type": "object"}},
        "required": ["algorithms", "configspace"]}}):
    """The search space: the project's CASH space (nothing given), its subset of
    ``algorithms``, or a ``configspace`` (ConfigSpace's serialized JSON: a CASH space with
    the root ``algorithm``, or one algorithm's space)."""

    algorithms: Annotated[list[Name], Field(min_length=1, max_length=100, json_schema_extra={"uniqueItems": True})
                          ] | None = None
    configspace: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _one(self) -> SpaceIn:
        if self.algorithms is not None and self.configspace is not None:
            raise ValueError("give algorithms or configspace, not both")
        if self.algorithms is not None and len(set(self.algorithms)) != len(self.algorithms):
            raise ValueError("algorithms are repeated")
        return self


class StudyIn(Body, json_schema_extra={"oneOf": [
        {"properties": {"dataset_id": {"type": "string"}}, "required": ["dataset_id"]},
        {"properties": {"dataset": {"type": "object"}}, "required": ["dataset"]},
        {"properties": {"upload": {"type": "object"}}, "required": ["upload"]}]}):
    """A new study: its dataset (exactly one of ``dataset_id`` of a stored dataset,
    ``dataset`` by meta-features, ``upload``), space, strategy, seed and metric."""

    study_id: StudyId | None = None
    dataset_id: Identifier | None = None
    dataset: DatasetIn | None = None
    upload: UploadIn | None = None
    space: SpaceIn = Field(default_factory=SpaceIn)
    strategy: StrategyName = AUTO
    seed: Annotated[int, BeforeValidator(_integral), Field(strict=True, ge=0, le=2**32 - 1)] = 0
    metric: Metric = "error_rate"

    @model_validator(mode="after")
    def _one_dataset(self) -> StudyIn:
        given = [f for f in ("dataset_id", "dataset", "upload") if getattr(self, f) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of dataset_id, dataset, upload (got {given or 'none'})")
        return self


class StudyOut(BaseModel):
    study_id: str
    dataset_id: str
    strategy: str
    #: why ``auto`` chose the strategy (empty when it was named)
    strategy_note: str = ""
    seed: int
    metric: str
    algorithms: list[str]
    status: str
    n_trials: int
    n_complete: int
    n_pending: int


class StudyRowOut(BaseModel):
    """A stored study as ``GET /studies`` lists it."""

    study_id: str
    dataset_id: str
    strategy: str | None
    status: str
    created_at: str


class TrialOut(BaseModel):
    """An asked configuration (:class:`metabo.optimizer.Trial`)."""

    number: int
    algorithm: str
    params: dict[str, Any]
    config_id: str


class FinishIn(Body):
    """How a study ended (stored as its session's status); asking again reopens it."""

    status: Literal["done", "failed"] = "done"


class TellIn(Body, json_schema_extra=_outcome_rule(("value", "test_value", "predictions"))):
    """The outcome of a trial. ``value`` (lower is better) is required with status ``ok``
    and refused with a failed status (crash, timeout, memout), like ``test_value``;
    ``predictions``: the validation outputs of a successful trial, n x K class
    probabilities (each in [0, 1], each row summing to 1) or n class indices (0, 1, ...)."""

    value: Finite | None = None
    status: Status = "ok"
    test_value: Finite | None = None
    fit_seconds: NonNegative | None = None
    predict_seconds: NonNegative | None = None
    message: Annotated[str, Field(max_length=2000)] | None = None
    predictions: (Annotated[list[Annotated[list[Probability], Field(min_length=1, max_length=10_000)]],
                            Field(min_length=1, max_length=1_000_000)]
                  | Annotated[list[ClassIndex], Field(min_length=1, max_length=1_000_000)] | None) = None

    @model_validator(mode="after")
    def _consistent(self) -> TellIn:
        check_outcome(self.status, value=self.value, test_value=self.test_value)
        if self.predictions is not None:
            if self.status != "ok":
                raise ValueError("predictions are stored for successful trials only")
            _check_predictions(self.predictions)
        return self


#: How far a row of probabilities may sum from 1 (they are stored as float32).
PROBABILITY_SUM_TOLERANCE = 1e-3


def _check_predictions(rows: list[list[float]] | list[float]) -> None:
    """n x K class probabilities (each in [0, 1], rows summing to 1) or n class indices."""
    if isinstance(rows[0], list):
        if len({len(r) for r in rows}) != 1:  # type: ignore[arg-type]
            raise ValueError("every row of predictions needs the same number of columns")
        for i, row in enumerate(rows):
            if not all(0.0 <= p <= 1.0 for p in row):  # type: ignore[union-attr]
                raise ValueError(f"predictions row {i}: class probabilities lie in [0, 1], got {row[:10]}")
            if abs(sum(row) - 1.0) > PROBABILITY_SUM_TOLERANCE:  # type: ignore[arg-type]
                raise ValueError(f"predictions row {i}: class probabilities sum to 1, this row sums to "
                                 f"{sum(row):g}")  # type: ignore[arg-type]
        return
    bad = next((p for p in rows if not (float(p) >= 0 and float(p).is_integer())), None)  # type: ignore[arg-type]
    if bad is not None:
        raise ValueError(f"predictions as one value per row are class indices (0, 1, ...), got {bad}; send "
                         "n x K class probabilities otherwise")


class TrialRecordOut(BaseModel):
    """A trial and, once told, its outcome (:class:`metabo.optimizer.TrialRecord`)."""

    number: int
    algorithm: str
    params: dict[str, Any]
    config_id: str
    state: Literal["pending", "complete"]
    value: float | None
    status: str | None
    test_value: float | None
    fit_seconds: float | None
    predict_seconds: float | None
    suggest_seconds: float | None
    message: str | None


class HistoryOut(BaseModel):
    study_id: str
    trials: list[TrialRecordOut]


class EnsembleIn(Body):
    """The true class index (0, 1, ...) of every validation row the trials' predictions
    were told on, in their order; each bag's selection size and the seed of the bags and
    of the guard's folds (:class:`~metabo.ensembles.library.OutOfFoldLibrary`)."""

    labels: Annotated[list[ClassIndex], Field(min_length=2, max_length=1_000_000)]
    ensemble_size: Annotated[int, BeforeValidator(_integral), Field(strict=True, ge=1, le=1000)] = 50
    seed: Annotated[int, BeforeValidator(_integral), Field(strict=True, ge=0, le=2**31 - 1)] = 0

    @model_validator(mode="after")
    def _indices(self) -> EnsembleIn:
        bad = next((p for p in self.labels if not (float(p) >= 0 and float(p).is_integer())), None)
        if bad is not None:
            raise ValueError(f"labels are class indices (0, 1, ...), got {bad}")
        return self


class EnsembleMemberOut(BaseModel):
    number: int
    weight: float


class EnsembleOut(BaseModel):
    """The guard's choice over the study's trials with predictions: the bagged ensemble
    selection (``kept: ensemble``) or the best trial alone (``single``), the members'
    weights (summing to 1), how they are combined, the cross-validated gain of the
    ensemble over the best trial and its standard error, and why."""

    study_id: str
    kept: Literal["ensemble", "single"]
    combine: Literal["average", "vote"]
    members: list[EnsembleMemberOut]
    gain: float | None
    se: float | None
    models: int
    left_out: list[int]
    note: str


# ------------------------------------------------------------------ knowledge
class SuggestIn(Body):
    """Warm-start configurations for a task with these meta-features."""

    meta_features: MetaFeatures
    k: Annotated[int, BeforeValidator(_integral), Field(strict=True, ge=1, le=100)] = 5
    algorithms: Annotated[list[Name], Field(min_length=1, max_length=100)] | None = None
    metric: Metric = "error_rate"
    exclude: Annotated[list[Identifier], Field(max_length=10_000)] = Field(
        default_factory=list, description="stored tasks to leave out (e.g. the same data)")


class SuggestionOut(BaseModel):
    algorithm: str
    params: dict[str, Any]
    from_task: str
    task_name: str
    distance: float
    value: float


class NearestIn(Body):
    meta_features: MetaFeatures
    k: Annotated[int, BeforeValidator(_integral), Field(strict=True, ge=1, le=1000)] = 5
    exclude: Annotated[list[Identifier], Field(max_length=10_000)] = Field(default_factory=list)


class NearestOut(BaseModel):
    dataset_id: str
    name: str
    distance: float
    n_features_used: int


class RankedOut(BaseModel):
    config_id: str
    mean_rank: float
    n_tasks: int
    params: dict[str, Any]


class PortfolioOut(BaseModel):
    config_id: str
    mean_regret: float
    n_tasks_covered: int
    params: dict[str, Any]


class RanksOut(BaseModel):
    """Configurations of one algorithm by mean within-task rank, and a greedy portfolio."""

    algorithm: str
    metric: str
    mean_ranks: list[RankedOut]
    portfolio: list[PortfolioOut]


# ------------------------------------------------------------------ ingestion
class RunIn(Body, json_schema_extra=_outcome_rule(("value",))):
    """One evaluation of a configuration on a stored dataset (lower ``value`` is better)."""

    dataset_id: Identifier
    algorithm: Name
    params: Params
    metric: Metric = "error_rate"
    value: Finite | None = None
    status: Status = "ok"
    fold: Count = 0
    repeat: Count = 0
    split_seed: Integer | None = None
    fidelity: Positive | None = None
    fit_seconds: NonNegative | None = None
    predict_seconds: NonNegative | None = None
    message: Annotated[str, Field(max_length=2000)] | None = None

    @model_validator(mode="after")
    def _value(self) -> RunIn:
        check_outcome(self.status, value=self.value)
        return self


class IngestIn(Body):
    """Runs stored in one transaction: all of them or, on any bad row, none."""

    runs: Annotated[list[RunIn], Field(min_length=1, max_length=100_000)]
    source: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]{0,49}(:[A-Za-z0-9_.-]{1,100})?$")] = "service"

    @model_validator(mode="after")
    def _source(self) -> IngestIn:
        if self.source.split(":", 1)[0] == "session":
            raise ValueError("source 'session:...' is reserved for the runs of tuning sessions")
        return self


class IngestOut(BaseModel):
    received: int
    inserted: int


class ErrorOut(BaseModel):
    """What every 4xx/5xx answer carries: a message naming the problem."""

    detail: str

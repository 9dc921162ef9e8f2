"""Refusal telemetry: a sink is told of every typed refusal (docs/design/chat.md).

Two sinks ship: ``LogRefusalSink`` writes one structured log record per refusal (JSON message and
the fields under ``extra["refusalkit"]``); ``OtelRefusalSink`` adds an OpenTelemetry span event
``refusalkit.refusal`` to the current span (or to a short span of its own when none is
recording). ``opentelemetry-api`` is an optional extra (``refusalkit[otel]``).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Protocol

from refusalkit.chat._events import TurnEvent
from refusalkit.errors import UsageError

__all__ = ["LogRefusalSink", "OtelRefusalSink", "RefusalSink", "refusal_fields"]


class RefusalSink(Protocol):
    """Receives each refused turn's event. Must not raise (the runtime logs and ignores errors)."""

    def refusal(self, event: TurnEvent) -> None:
        """Record one refusal."""
        ...


def refusal_fields(event: TurnEvent) -> dict[str, Any]:
    """The log-safe fields of a refusal: ids, tags and digests, never text."""
    return {
        "schema": event.schema,
        "event_id": event.event_id,
        "session": event.session,
        "turn": event.turn,
        "tags": list(event.refusal_tags),
        "matched_rule": event.refusal_tags[0] if event.refusal_tags else None,
        "decision_id": event.decision_id,
        "retry_attempted": bool(event.retry and event.retry.get("attempted")),
        "articulation_digest": event.surfaces.get("articulation_surface"),
    }


class LogRefusalSink:
    """One structured ``logging`` record per refusal, on ``refusalkit.chat.refusals``."""

    def __init__(self, logger: logging.Logger | None = None, level: int = logging.INFO) -> None:
        self.logger = logger or logging.getLogger("refusalkit.chat.refusals")
        self.level = level

    def refusal(self, event: TurnEvent) -> None:
        """Log the refusal as a JSON message with the same fields as ``extra``."""
        fields = refusal_fields(event)
        message = json.dumps(fields, sort_keys=True, ensure_ascii=False)
        self.logger.log(self.level, "refusal %s", message, extra={"refusalkit": fields})


class OtelRefusalSink:
    """An OpenTelemetry span event per refusal (needs ``opentelemetry-api``)."""

    EVENT_NAME = "refusalkit.refusal"

    def __init__(self, tracer_name: str = "refusalkit.chat", tracer_provider: Any = None) -> None:
        """Use the global tracer provider, or ``tracer_provider`` when given."""
        try:
            from opentelemetry import trace  # noqa: PLC0415 (optional extra)
        except ImportError as exc:
            raise UsageError(
                "OpenTelemetry refusal events need the opentelemetry-api package",
                hint="pip install 'refusalkit[otel]'",
            ) from exc
        self._trace = trace
        self._tracer = trace.get_tracer(tracer_name, tracer_provider=tracer_provider)

    def refusal(self, event: TurnEvent) -> None:
        """Add the event to the recording span, else to a span of its own."""
        attributes = _otel_attributes(event)
        span = self._trace.get_current_span()
        if span.is_recording():
            span.add_event(self.EVENT_NAME, attributes=attributes)
            return
        with self._tracer.start_as_current_span("refusalkit.chat.turn") as own:
            own.add_event(self.EVENT_NAME, attributes=attributes)


def _otel_attributes(event: TurnEvent) -> dict[str, Any]:
    fields = refusal_fields(event)
    out: dict[str, Any] = {f"refusalkit.{k}": v for k, v in fields.items() if v is not None}
    out["refusalkit.tags"] = list(event.refusal_tags)
    return out

"""OpenTelemetry span events per refusal (real SDK, in-memory exporter)."""

from __future__ import annotations

from typing import Any

from refusalkit.chat import ChatRuntime, OtelRefusalSink


def test_refusal_becomes_a_span_event_on_the_current_span(provider: Any) -> None:
    spans = provider.exporter
    runtime = ChatRuntime(sinks=[OtelRefusalSink(tracer_provider=provider)])
    with provider.get_tracer("app").start_as_current_span("handle-chat"):
        runtime.check("hi", "Hello.")
        refused = runtime.check("key?", "It is AKIAQ3EGRT5WZ7XK2LMN")
    [span] = spans.get_finished_spans()
    assert span.name == "handle-chat"
    [event] = span.events
    assert event.name == "refusalkit.refusal"
    assert tuple(event.attributes["refusalkit.tags"]) == ("safety:no_secret_disclosure",)
    assert event.attributes["refusalkit.decision_id"] == refused.decision.decision_id
    assert all("AKIA" not in str(v) for v in event.attributes.values())


def test_without_a_recording_span_the_sink_makes_its_own(provider: Any) -> None:
    spans = provider.exporter
    runtime = ChatRuntime(sinks=[OtelRefusalSink(tracer_provider=provider)])
    runtime.check("dose?", "Take 10 mg twice a day.")
    [span] = spans.get_finished_spans()
    assert span.name == "refusalkit.chat.turn"
    assert span.events[0].attributes["refusalkit.matched_rule"] == "ethics:no_dosage_instructions"

"""Fixtures shared by the chat tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def provider() -> Iterator[Any]:
    """A real OpenTelemetry SDK tracer provider with an in-memory exporter (not installed
    globally); its spans are ``provider.exporter.get_finished_spans()``."""
    sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
    export = pytest.importorskip("opentelemetry.sdk.trace.export")
    in_memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    tracer_provider = sdk_trace.TracerProvider()
    tracer_provider.exporter = in_memory.InMemorySpanExporter()
    tracer_provider.add_span_processor(export.SimpleSpanProcessor(tracer_provider.exporter))
    yield tracer_provider
    tracer_provider.shutdown()

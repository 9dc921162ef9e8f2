"""A writer process for the concurrency and crash tests (not a test module).

``python journal_writer.py STORE KEYRING TAG COUNT`` appends COUNT batches (COUNT < 0: forever)
of 1-20 records tagged TAG, printing ``{"first", "count", "tag", "batch"}`` after each append
returns (the acknowledgement), and signs a checkpoint now and then.
"""

from __future__ import annotations

import json
import random
import sys

from refusalkit.journal import open_journal
from refusalkit.keyring import Keyring


def record(tag: str, batch: int, k: int) -> dict[str, object]:
    """The record a writer appends: the expectation the tests check entries against."""
    return {"schema": "refusalkit.test/v1", "tag": tag, "batch": batch, "k": k}


def main(store: str, keyring_path: str, tag: str, count: int) -> None:
    rng = random.Random(tag)
    with open_journal(store, Keyring.load(keyring_path), origin="example.com/test") as journal:
        batch = 0
        while count < 0 or batch < count:
            size = rng.randint(1, 20)
            indices = journal.append([record(tag, batch, k) for k in range(size)])
            print(
                json.dumps(
                    {"first": indices[0], "count": len(indices), "tag": tag, "batch": batch}
                ),
                flush=True,
            )
            if rng.random() < 0.2:
                journal.checkpoint()
            batch += 1


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))

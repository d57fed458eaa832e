"""Ids and names drawn from the simulation's seeded random source, shaped as Kafka's are."""

from __future__ import annotations

import base64
import random


def uuid_text(rng: random.Random) -> str:
    """``Uuid.randomUuid().toString()``: a version-4 UUID in unpadded base64url, never starting with
    '-' (Kafka draws again) and so never one of the reserved low ids."""
    while True:
        raw = bytearray(rng.randbytes(16))
        raw[6] = raw[6] & 0x0F | 0x40
        raw[8] = raw[8] & 0x3F | 0x80
        text = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


TOPIC_WORDS = ("orders", "payments", "clicks", "inventory", "shipments", "users", "sessions", "metrics",
               "audit", "invoices", "carts", "reviews", "alerts", "ledger", "telemetry", "search")
USERS = ("alice", "bob", "carol", "dave", "erin", "svc-orders", "svc-payments", "svc-etl")
CLIENTS = ("producer-1", "producer-2", "consumer-app", "etl-job", "mirror-maker")


def topic_name(rng: random.Random, taken: set[str]) -> str:
    """A name not in ``taken``: a word, then the word with a number."""
    word = rng.choice(TOPIC_WORDS)
    if word not in taken:
        return word
    n = 2
    while f"{word}-{n}" in taken:
        n += 1
    return f"{word}-{n}"

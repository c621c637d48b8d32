"""Debounced keyed update queues: in-process now, durable SQL-backed ones later."""

from memfold.queue.base import Job, JobKey, QueueStatus, UpdateQueue, job_key
from memfold.queue.clock import Clock, FakeClock, SystemClock
from memfold.queue.memory import InProcessQueue

__all__ = [
    "Clock",
    "FakeClock",
    "InProcessQueue",
    "Job",
    "JobKey",
    "QueueStatus",
    "SystemClock",
    "UpdateQueue",
    "job_key",
]

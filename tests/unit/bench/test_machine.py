"""The machine's busy cores over a phase, from two readings of its CPU times."""

from __future__ import annotations

import os

from bench.machine import CpuTimes, cpu_times


def test_busy_cores_are_the_busy_share_of_all_cpu_time_times_the_cores() -> None:
    cores = os.cpu_count() or 1
    before = CpuTimes(busy=100.0, total=400.0)
    # A quarter of the CPU time that passed was busy.
    after = CpuTimes(busy=110.0, total=440.0)

    assert after.busy_cores_since(before) == 0.25 * cores


def test_a_machine_busy_throughout_counts_every_core_and_never_more() -> None:
    cores = os.cpu_count() or 1
    before = CpuTimes(busy=100.0, total=400.0)

    assert CpuTimes(busy=140.0, total=440.0).busy_cores_since(before) == cores


def test_no_time_passed_is_no_core_busy() -> None:
    reading = CpuTimes(busy=5.0, total=20.0)

    assert reading.busy_cores_since(reading) == 0.0


def test_a_real_reading_counts_busy_time_within_all_time() -> None:
    reading = cpu_times()

    assert 0 < reading.busy <= reading.total

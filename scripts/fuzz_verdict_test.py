#!/usr/bin/env python3
"""Tests of scripts/fuzz_verdict.py on recorded schemathesis event logs
(scripts/testdata/fuzz/, cut from real runs of scripts/fuzz-api.sh against
this server, schemathesis 4.32.5 on CPython 3.11.7): a tool crash is told
from a server failure. scripts/test.sh runs it: python3 scripts/fuzz_verdict_test.py
"""

import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fuzz_verdict  # noqa: E402

DATA = os.path.join(HERE, "testdata", "fuzz")


def judge(status, name):
    return fuzz_verdict.verdict(status, fuzz_verdict.read_events(os.path.join(DATA, name)))[0]


def judge_lines(status, lines):
    with tempfile.NamedTemporaryFile("w", suffix=".ndjson", delete=False) as f:
        f.writelines(json.dumps(e) + "\n" for e in lines)
    try:
        return fuzz_verdict.verdict(status, fuzz_verdict.read_events(f.name))[0]
    finally:
        os.unlink(f.name)


def recorded(name):
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


class Verdict(unittest.TestCase):
    def test_a_clean_run_passes(self):
        self.assertEqual(judge(0, "pass.ndjson"), "pass")

    def test_the_ast_crash_with_no_failed_check_is_the_tools(self):
        line = judge(2, "crash.ndjson")
        self.assertTrue(line.startswith("crash coverage "), line)
        self.assertIn("AST constructor recursion depth mismatch", line)

    def test_a_failed_check_fails(self):
        self.assertEqual(judge(1, "failure.ndjson"), "fail 1 failed checks")

    def test_a_failed_check_fails_even_beside_a_crash(self):
        self.assertEqual(judge(1, "failure-and-crash.ndjson"), "fail 1 failed checks")

    def test_a_network_error_is_the_servers(self):
        events = recorded("crash.ndjson")
        for event in events:
            if "NonFatalError" in event:
                event["NonFatalError"]["value"] = {
                    "type": "ConnectionError",
                    "message": "Connection refused",
                }
        line = judge_lines(2, events)
        self.assertTrue(line.startswith("fail ConnectionError in coverage"), line)

    def test_an_error_of_an_unknown_kind_fails_closed(self):
        events = recorded("crash.ndjson")
        events[-3:-3] = [{"NonFatalError": {"value": {"type": "InvalidSchema", "message": "bad regex"}, "phase": "fuzzing", "label": "GET /v1/x"}}]
        self.assertTrue(judge_lines(2, events).startswith("fail InvalidSchema in fuzzing"))

    def test_a_fatal_crash_names_the_phase_it_was_in(self):
        events = [e for e in recorded("pass.ndjson") if "EngineFinished" not in e]
        # the log of a run that died in the fuzzing phase
        cut = next(i for i, e in enumerate(events) if e.get("PhaseStarted", {}).get("phase", {}).get("name") == "fuzzing")
        events = events[: cut + 1] + [{"FatalError": {"exception": {"type": "SystemError", "message": "AST constructor recursion depth mismatch"}}}]
        self.assertTrue(judge_lines(2, events).startswith("crash fuzzing "))

    def test_a_failing_exit_without_any_error_in_the_log_fails(self):
        self.assertTrue(judge(2, "pass.ndjson").startswith("fail schemathesis exited 2"))

    def test_a_missing_log_fails_unless_the_run_passed(self):
        self.assertTrue(judge(2, "no-such-file.ndjson").startswith("fail "))

    def test_figures_count_requests_and_failed_checks(self):
        figures = fuzz_verdict.verdict(1, fuzz_verdict.read_events(os.path.join(DATA, "failure.ndjson")))[1]
        self.assertEqual(figures, "fuzz: 5 requests, 1 failed checks")

    def test_a_crashed_phase_is_dropped_from_the_list(self):
        self.assertEqual(fuzz_verdict.without("examples,coverage,fuzzing", "coverage"), "examples,fuzzing")
        self.assertEqual(fuzz_verdict.without("coverage", "coverage,fuzzing"), "")


if __name__ == "__main__":
    unittest.main(verbosity=2)

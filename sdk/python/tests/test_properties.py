"""Property tests (Hypothesis) of what the SDK parses from a server: the
event stream (text/event-stream) and the JSON of its events.  Issue 16: the
parsers of hostile input are fuzzed; libFuzzer does not reach Python, so
these generate the inputs.  Each property runs a few hundred examples per
`make test`; HYPOTHESIS_EXAMPLES=N runs more.
"""

import atexit
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from chidori.client import decode_event  # noqa: E402
from chidori.errors import ProtocolError  # noqa: E402
from chidori.sse import RawEvent, SSEParser  # noqa: E402
from chidori.types import Event, Session  # noqa: E402

# Hypothesis keeps caches (its Unicode tables) in a directory: a temporary one,
# removed at exit, so a test run leaves nothing in the tree.
if "HYPOTHESIS_STORAGE_DIRECTORY" not in os.environ:
    _home = tempfile.mkdtemp(prefix="chidori-hypothesis-")
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = _home
    atexit.register(shutil.rmtree, _home, True)

try:
    from hypothesis import HealthCheck, given, settings, strategies as st
except ImportError:  # pragma: no cover - make deps installs python3-hypothesis
    given = None

EXAMPLES = int(os.environ.get("HYPOTHESIS_EXAMPLES", "300"))


def _split(data: bytes, cuts: list) -> list:
    """data cut at the given offsets (any, sorted, deduplicated)."""
    offs = sorted({c % (len(data) + 1) for c in cuts})
    out, prev = [], 0
    for o in offs + [len(data)]:
        out.append(data[prev:o])
        prev = o
    return out


def _parse_all(chunks: list, max_event: int = 64 << 20) -> list:
    p = SSEParser(max_event)
    out = []
    for c in chunks:
        out.extend(p.feed_bytes(c))
    return out


if given is None:
    class PropertyTests(unittest.TestCase):
        @unittest.skip("python3-hypothesis is not installed (make deps installs it)")
        def test_properties(self) -> None:
            pass
else:
    SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                        suppress_health_check=[HealthCheck.too_slow])
    # Field text: anything but the line endings (a value cannot hold them).
    field_text = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=40)
    ending = st.sampled_from([b"\n", b"\r\n", b"\r"])
    event_strategy = st.tuples(
        st.one_of(st.none(), field_text.filter(lambda s: s != "" and not s.startswith(" "))),  # event name
        st.lists(field_text, min_size=1, max_size=4),  # data lines
        st.one_of(st.none(), field_text.filter(lambda s: "\0" not in s)),  # id
        st.booleans(),  # a comment line before it
    )

    class PropertyTests(unittest.TestCase):
        @SETTINGS
        @given(st.lists(event_strategy, max_size=6), st.lists(ending, min_size=1, max_size=8),
               st.lists(st.integers(min_value=0), max_size=12), st.booleans())
        def test_events_come_back_whatever_the_line_endings_and_the_cuts(self, events, endings, cuts, bom) -> None:
            wire = bytearray(b"\xef\xbb\xbf" if bom else b"")
            want = []
            last_id = None
            k = 0

            def end() -> bytes:
                # A CR then an LF is one line ending (CRLF), as the format says: after
                # a lone CR the next ending is not a lone LF.
                nonlocal k
                k += 1
                e = endings[k % len(endings)]
                if e == b"\n" and wire.endswith(b"\r"):
                    e = b"\r\n"
                return e

            for name, data, eid, comment in events:
                if comment:
                    wire += b": keep-alive" + end()
                if name is not None:
                    wire += b"event: " + name.encode() + end()
                if eid is not None:
                    wire += b"id: " + eid.encode() + end()
                    last_id = eid
                for d in data:
                    wire += b"data: " + d.encode() + end()
                wire += end()
                want.append(RawEvent(last_id, name or "message", "\n".join(data)))
            # A CR at the very end may still be followed by an LF: the stream goes on.
            got = _parse_all(_split(bytes(wire), cuts))
            self.assertEqual(got, want)

        @SETTINGS
        @given(st.binary(max_size=400) | st.lists(st.sampled_from([b"data: x", b"event:e", b"id: 1", b":c", b"\r", b"\n", b"\r\n", b"\xef\xbb\xbf", b"\xff", b"x" * 30]), max_size=30).map(b"".join), st.lists(st.integers(min_value=0), max_size=12))
        def test_any_bytes_parse_the_same_however_cut_and_never_raise_but_the_limit(self, data, cuts) -> None:
            def outcome(chunks: list) -> object:
                try:
                    return _parse_all(chunks, max_event=64)
                except ValueError as e:
                    self.assertIn("larger than 64 bytes", str(e))
                    return "refused"
            self.assertEqual(outcome(_split(data, cuts)), outcome([data]))

        @SETTINGS
        @given(st.integers(min_value=1, max_value=300), st.integers(min_value=1, max_value=64))
        def test_a_line_without_end_is_refused_past_the_limit_not_kept(self, n, chunk) -> None:
            p = SSEParser(max_event=100)
            data = b"data: " + b"x" * (n * 2)
            fed = 0
            with self.assertRaises(ValueError) if len(data) > 100 else _Nothing():
                while fed < len(data):
                    p.feed_bytes(data[fed:fed + chunk])
                    fed += chunk
                    self.assertLessEqual(len(p._line), 100 + chunk)

        json_values = st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
            lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
            max_leaves=20)

        @SETTINGS
        @given(st.sampled_from(["status", "done", "approval", "input", "log", "call", "other", "message"]),
               json_values, st.one_of(st.none(), st.text(max_size=8)))
        def test_event_json_is_an_event_or_a_protocol_error(self, name, value, eid) -> None:
            import json
            raw = RawEvent(eid, name, json.dumps(value))
            try:
                ev = decode_event(raw, "GET /sessions/s1/events")
            except ProtocolError as e:
                self.assertEqual(e.code, "not_json")
                return
            self.assertIsInstance(ev, Event)
            if name in ("status", "done"):
                self.assertIsInstance(ev.session, Session)  # type: ignore[attr-defined]

        @SETTINGS
        @given(st.binary(max_size=200))
        def test_event_bytes_are_an_event_or_a_protocol_error(self, data) -> None:
            raw = RawEvent("1", "status", data.decode("utf-8", "replace"))
            try:
                decode_event(raw, "what")
            except ProtocolError:
                pass

        def test_json_nested_too_deeply_is_a_protocol_error(self) -> None:
            # A finding of these tests: json.loads raised RecursionError, not the SDK's error.
            raw = RawEvent("1", "done", "[" * 100000 + "]" * 100000)
            with self.assertRaises(ProtocolError) as cm:
                decode_event(raw, "what")
            self.assertIn("nested too deeply", str(cm.exception))


class _Nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: object) -> bool:
        return False


if __name__ == "__main__":
    unittest.main()

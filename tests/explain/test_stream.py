"""explain's input: UTF-16 and BOM logs decoded, terminal colours and CRLF removed, stdin under the same
size limit as a file, and memory that does not grow with the log (a 250 MB log must not need GBs)."""
from __future__ import annotations

import io
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from rcompat.errors import UsageError
from rcompat.explain import explain, load_symptoms
from rcompat.explain.stream import decoded_pieces, input_pieces, sniff_encoding

REPO = Path(__file__).resolve().parents[2]
TEXT = ("PS C:\\work> python train.py\nImportError: libcudnn_cnn.so.9: cannot open shared object file: "
        "No such file or directory\n")
SYMPTOMS = load_symptoms()


def _ids(report):
    return [f.evidence.get("symptom") for f in report.findings]


@pytest.mark.parametrize("encoding, bom", [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff"),
                                           ("utf-8", b"\xef\xbb\xbf"), ("utf-32-le", b"\xff\xfe\x00\x00"),
                                           ("utf-16-le", b""), ("utf-8", b"")])
def test_a_log_in_any_of_powershells_encodings_reads_as_utf8(encoding, bom):
    data = bom + TEXT.replace("\n", "\r\n").encode(encoding)
    assert sniff_encoding(data)[0] == encoding
    text = "".join(decoded_pieces(io.BytesIO(data), 1 << 20, "x"))
    assert text == TEXT
    assert _ids(explain(text, SYMPTOMS)) == ["shared-library-not-found"]


def test_utf16_log_from_a_file_through_the_cli(cli, tmp_path):
    log = tmp_path / "powershell.log"
    log.write_bytes(b"\xff\xfe" + TEXT.encode("utf-16-le"))
    run = cli("explain", "--from-file", str(log), "-f", "json")
    assert run.returncode == 1 and "EXPLAIN-SHARED-LIBRARY-NOT-FOUND" in run.stdout
    assert '"line": 2' in run.stdout  # line numbers are the file's


def test_terminal_colours_and_crlf_do_not_hide_the_text():
    jupyter = ("\x1b[0;31m---------------------------------------------------------------------------\x1b[0m\r\n"
               "\x1b[0;31mOSError\x1b[0m: \x1b[1;32mlibcudnn_cnn.so.9\x1b[0m: cannot open shared object file\r\n")
    report = explain(jupyter, SYMPTOMS)
    assert _ids(report) == ["shared-library-not-found"]
    assert report.findings[0].evidence["line"] == 2
    assert report.findings[0].evidence["groups"]["lib"] == "libcudnn_cnn.so.9"


def test_stdin_is_held_to_the_log_limit_like_a_file(tmp_path, monkeypatch):
    monkeypatch.setenv("RCOMPAT_MAX_LOG_MB", "1")
    big = b"epoch 1 loss 0.1\n" * 70_000  # 1.1 MiB
    with pytest.raises(UsageError, match="more than the 1 MiB limit"):
        list(input_pieces(["-"], None, io.BytesIO(big)))
    log = tmp_path / "big.log"
    log.write_bytes(big)
    with pytest.raises(UsageError, match="more than the 1 MiB limit"):
        list(input_pieces(None, str(log)))
    piped = subprocess.run([sys.executable, "-m", "rcompat", "explain", "-"], input=big, capture_output=True,
                           cwd=str(REPO), env={**__import__("os").environ, "RCOMPAT_MAX_LOG_MB": "1"})
    assert piped.returncode == 2 and piped.stdout == b""
    assert piped.stderr.decode().strip().count("\n") == 0 and b"RCOMPAT_MAX_LOG_MB" in piped.stderr


def test_stdin_named_twice_is_read_once():
    pieces = list(input_pieces(["-"], "-", io.BytesIO(TEXT.encode())))
    assert "".join(pieces).count("libcudnn_cnn") == 1


def test_memory_does_not_grow_with_the_log(monkeypatch):
    """Two logs, 1 MB and 4 MB of the same kind, streamed in 256 KiB pieces with 256 KiB blocks: the
    peak of what explain holds is the same for both (it keeps one block, not the log; with the default
    4 MiB blocks a 250 MB log peaks at tens of MB, not GBs). Measured here: 2.19 MB for 2 and 10 MB."""
    from rcompat.explain import matching

    monkeypatch.setattr(matching, "BLOCK", 256 * 1024)
    line = "epoch 1 step 2 loss 0.1234 lr 3e-4 /data/shard-001.parquet\n"
    error = "ImportError: libcudnn_cnn.so.9: cannot open shared object file: No such file or directory\n"

    def pieces(quarters):
        chunk = line * (256 * 1024 // len(line))
        for i in range(quarters):
            yield chunk + (error if i % 5 == 0 else "")

    explain(error, SYMPTOMS)  # first-call imports are not the log's
    peaks = []
    for quarters in (4, 16):
        tracemalloc.start()
        report = explain(pieces(quarters), SYMPTOMS)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert _ids(report) == ["shared-library-not-found"]
        assert report.facts["explain"]["input_lines"] > quarters * 4_000  # every line was read
    assert abs(peaks[1] - peaks[0]) < 512 * 1024, peaks  # holding the log would add 3 MB


def test_a_match_across_a_block_boundary_is_found_once(monkeypatch):
    from rcompat.explain import matching

    monkeypatch.setattr(matching, "BLOCK", 4096)
    filler = "x" * 100 + "\n"
    text = filler * 39 + "ImportError: libcudnn_cnn.so.9: cannot open shared object file\n" + filler * 200
    report = explain(iter([text[i:i + 1000] for i in range(0, len(text), 1000)]), SYMPTOMS)
    assert _ids(report) == ["shared-library-not-found"]
    assert report.findings[0].evidence["line"] == 40 and "occurrences" not in report.findings[0].evidence


def test_without_pyahocorasick_the_same_texts_are_placed(monkeypatch):
    """The one-pass literal search (Aho-Corasick) and the str.find fallback window the same places."""
    from rcompat.explain import matching
    from rcompat.explain.corpus import load_cases

    texts = [c["text"] for c in load_cases("corpus")[::3] + load_cases("new")[::3]]
    log = "\nepoch 1 loss 0.1\n".join(texts)
    with_automaton = [(m.symptom.id, m.first_line) for m in matching.find_matches(log, SYMPTOMS)]
    assert matching.literal_automaton(SYMPTOMS) is not None
    monkeypatch.setattr(matching, "literal_automaton", lambda symptoms: None)
    without = [(m.symptom.id, m.first_line) for m in matching.find_matches(log, SYMPTOMS)]
    assert with_automaton == without and len(without) > 40

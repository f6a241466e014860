"""`explain --check`: the library and symbol a text names, looked up on this machine (ELF tables read
through rcompat's reader, nothing loaded), folded into the finding; without --check nothing is read.
The libraries are compiled here from C sources: an nvJitLink 12.1 that lacks 12.4's entry point."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from rcompat.explain import explain, load_symptoms
from rcompat.explain.confirm import file_version, find_library

SYMPTOMS = load_symptoms()
TEXT = ("ImportError: /opt/venv/lib/python3.12/site-packages/nvidia/cusparse/lib/libcusparse.so.12: undefined "
        "symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12\n")


@pytest.fixture(scope="session")
def old_nvjitlink(gcc, tmp_path_factory):
    """A directory with libnvJitLink.so.12 -> libnvJitLink.so.12.1.105 that defines only 12.1's names."""
    d = tmp_path_factory.mktemp("nvjitlink")
    src = d / "nvjitlink.c"
    src.write_text("int __nvJitLinkCreate_12_1(void) { return 0; }\nint __nvJitLinkComplete_12_1(void) { return 0; }\n")
    real = d / "libnvJitLink.so.12.1.105"
    subprocess.run([gcc, "-shared", "-fPIC", "-Wl,-soname,libnvJitLink.so.12", "-o", str(real), str(src)],
                   check=True, capture_output=True)
    (d / "libnvJitLink.so.12").symlink_to(real.name)
    return d


def test_check_confirms_the_library_here_lacks_the_symbol(old_nvjitlink, monkeypatch, tmp_path):
    monkeypatch.setenv("LD_LIBRARY_PATH", str(old_nvjitlink))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert find_library("libnvJitLink.so.12")[0] == str(old_nvjitlink / "libnvJitLink.so.12")
    assert file_version(str(old_nvjitlink / "libnvJitLink.so.12")) == "12.1.105"
    finding = explain(TEXT, SYMPTOMS, check=True).findings[0]
    expected = (f"Confirmed: libnvJitLink.so.12 here is {old_nvjitlink}/libnvJitLink.so.12 (version 12.1.105) "
                "and does not define __nvJitLinkComplete_12_4.")
    assert expected in finding.message and finding.evidence["checked"] == [expected]
    assert "it needs nvJitLink 12.4 or newer" in finding.message


def test_check_says_when_the_symbol_is_there(old_nvjitlink, monkeypatch, tmp_path):
    monkeypatch.setenv("LD_LIBRARY_PATH", str(old_nvjitlink))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    finding = explain(TEXT.replace("_12_4", "_12_1"), SYMPTOMS, check=True).findings[0]
    assert "and defines __nvJitLinkComplete_12_1: on this machine the loader would bind it" in finding.message


def test_check_of_a_missing_library_and_of_a_windows_text(monkeypatch, tmp_path):
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path))
    missing = explain("OSError: libcudnn_cnn_rcompat_test.so.9: cannot open shared object file", SYMPTOMS,
                      check=True).findings[0]
    assert "libcudnn_cnn_rcompat_test.so.9 is not found on this machine either" in missing.message
    windows = explain('OSError: [WinError 126] The specified module could not be found. Error loading '
                      '"C:\\torch\\lib\\fbgemm.dll" or one of its dependencies.', SYMPTOMS, check=True).findings[0]
    assert windows.evidence["checked"] == ["Not checked here: the text comes from Windows or macOS, and rcompat's "
                                           "probes read Linux (ELF) libraries."]


def test_without_check_nothing_is_looked_up(old_nvjitlink, monkeypatch, tmp_path):
    monkeypatch.setenv("LD_LIBRARY_PATH", str(old_nvjitlink))
    from rcompat.explain import confirm

    monkeypatch.setattr(confirm, "confirm", lambda match: pytest.fail("looked up without --check"))
    finding = explain(TEXT, SYMPTOMS).findings[0]
    assert finding.evidence["checked"] == [] and "Confirmed" not in finding.message


def test_cli_check_flag(cli, old_nvjitlink, tmp_path):
    env = {**os.environ, "LD_LIBRARY_PATH": str(old_nvjitlink), "XDG_CACHE_HOME": str(tmp_path)}
    import sys
    from pathlib import Path

    run = subprocess.run([sys.executable, "-m", "rcompat", "explain", "--check", "-f", "json", TEXT],
                         capture_output=True, text=True, env=env, cwd=str(Path(__file__).resolve().parents[2]))
    assert run.returncode == 1, run.stderr
    finding = json.loads(run.stdout)["findings"][0]
    assert finding["evidence"]["checked"][0].startswith("Confirmed: libnvJitLink.so.12 here is")
    assert json.loads(run.stdout)["facts"]["explain"]["checked"] is True


def _cuda_wheel_lib(soname: str):
    places = find_library(soname)
    return places[0] if places else None


@pytest.mark.gpu
def test_check_reads_the_real_cuda_libraries_of_this_machine(tmp_path, monkeypatch):
    """On a GPU machine with Python torch's CUDA wheels: --check finds the real libnvJitLink and libcudnn
    where torch would load them and reads their symbols (never loading them)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    nvjitlink = _cuda_wheel_lib("libnvJitLink.so.12") or _cuda_wheel_lib("libnvJitLink.so.13")
    cudnn = _cuda_wheel_lib("libcudnn.so.9")
    if not nvjitlink or not cudnn:
        pytest.skip("no CUDA libraries of torch's nvidia-* wheels (or the toolkit) on this machine")
    soname = os.path.basename(nvjitlink)
    text = f"libcusparse.so.12: undefined symbol: __nvJitLinkComplete_99_9, version {soname}\n"
    finding = explain(text, SYMPTOMS, check=True).findings[0]
    assert f"Confirmed: {soname} here is {nvjitlink}" in finding.message
    assert "does not define __nvJitLinkComplete_99_9" in finding.message
    missing = explain("OSError: libcudnn.so.9: cannot open shared object file", SYMPTOMS, check=True).findings[0]
    assert f"Checked here: libcudnn.so.9 is at {cudnn}" in missing.message

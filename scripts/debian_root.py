#!/usr/bin/env python3
"""Build, cache and enter a Debian root of the *other* Debian release (the R 4.5 / R 4.2 test tier).

    ensure_root(suite="auto") -> Path      a complete root, built once and cached
    run_in_root(root, argv, env=None, timeout=600, binds=None) -> CompletedProcess

A root is built by `debootstrap --variant=minbase` into a temporary directory next to the cache, from
the Debian mirror apt already uses, then gets PACKAGES, the host's CA certificates and a wheelhouse
(rpy2 built against the root's R); only then is it renamed to its cache name, a hash of the suite,
the package lists and BUILDER_VERSION. So a half-built root is never taken for a good one, and a
changed package list builds a new root instead of reusing the old one.

Commands run under `unshare --mount --pid --fork`: /proc, /sys, /dev and the binds are mounted in a
mount namespace of their own, then the command is chrooted into the root. The kernel drops those
mounts when the namespace's last process ends, and ends every process of the PID namespace when
its first one dies (the caller's death kills it: PR_SET_PDEATHSIG), also on a crash, a timeout,
Ctrl-C or SIGTERM. So nothing is ever left mounted on the host, no process outlives the call, and
two callers can use the same root at once. (The caller's thread must outlive the call: the death
signal follows the thread that started it.)

Standard library only: the Makefile and CI may run it before any virtualenv exists
(`python3 scripts/debian_root.py build` prints the root's path).
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

BUILDER_VERSION = "1"
PACKAGES = ("r-base-core", "r-base-dev", "python3", "python3-venv", "python3-dev", "python3-pip",
            "gcc", "g++", "make", "binutils", "ca-certificates", "r-cran-reticulate",
            "r-cran-jsonlite", "r-cran-rcpp", "r-cran-testthat", "abigail-tools", "libc6-dev")
# Built into the root's wheelhouse (/opt/rcompat-wheels) against the root's own R and Python, so a test
# session installs them offline in seconds. "rpy2" is whatever the [[rpy2]] table picks for the
# root's R (scripts/rpy2_requirement.py, run inside the root).
# The test extras are there too, so `make setup` works inside the root without an index.
# rcompat's own dependencies (pyproject.toml's [project].dependencies) are added, so that a wheel of
# rcompat installs offline and a new dependency never needs a second list kept by hand.
_RUNTIME_WHEELS = ("rpy2", "numpy", "setuptools", "wheel", "pytest>=7", "pandas>=1.5", "nvidia-ml-py>=12",
                   "junitparser>=3")


def _project_dependencies() -> tuple[str, ...]:
    import tomllib  # Python 3.11+: Debian 12's and 13's python3

    with open(Path(__file__).resolve().parent.parent / "pyproject.toml", "rb") as fh:
        return tuple(tomllib.load(fh)["project"]["dependencies"])


WHEELS = _RUNTIME_WHEELS + tuple(d for d in _project_dependencies() if d not in _RUNTIME_WHEELS)
WHEELHOUSE = "/opt/rcompat-wheels"
OTHER_SUITE = {"bookworm": "trixie", "trixie": "bookworm"}
RETRIES = 3


class RootUnavailable(RuntimeError):
    """This machine cannot build or enter a root (not root, no debootstrap, no mirror): tests skip."""


class RootError(RuntimeError):
    """A root could not be built, or a command could not be started inside it."""


def cache_dir() -> Path:
    """RCOMPAT_TIER_CACHE, else /var/cache/rcompat-tier as root, else $XDG_CACHE_HOME/rcompat-tier."""
    if os.environ.get("RCOMPAT_TIER_CACHE"):
        return Path(os.environ["RCOMPAT_TIER_CACHE"])
    if os.geteuid() == 0:
        return Path("/var/cache/rcompat-tier")
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rcompat-tier"


def host_codename(os_release: Path = Path("/etc/os-release")) -> str:
    fields = dict(re.findall(r'^(\w+)="?([^"\n]*)"?$', os_release.read_text(), re.M))
    return fields.get("VERSION_CODENAME", "")


def resolve_suite(suite: str = "auto") -> str:
    """auto: the Debian release the host is not (trixie on 12, bookworm on 13)."""
    if suite != "auto":
        return suite
    codename = host_codename()
    if codename not in OTHER_SUITE:
        raise RootUnavailable(f"host is not Debian 12 or 13 (VERSION_CODENAME={codename!r} in "
                              "/etc/os-release); pass a suite")
    return OTHER_SUITE[codename]


def _apt_entries(apt_dir: Path):
    """(types, uris, suites) of every enabled apt source: one-line *.list and deb822 *.sources."""
    lists = [apt_dir / "sources.list", *sorted((apt_dir / "sources.list.d").glob("*.list"))]
    for path in lists:
        if not path.is_file():
            continue
        for line in path.read_text(errors="replace").splitlines():
            words = re.sub(r"\[[^]]*\]", " ", line.split("#", 1)[0]).split()
            if len(words) >= 3:
                yield [words[0]], [words[1]], [words[2]]
    for path in sorted((apt_dir / "sources.list.d").glob("*.sources")):
        for stanza in re.split(r"\n\s*\n", path.read_text(errors="replace")):
            fields = {}
            for line in stanza.splitlines():
                if ":" in line and not line.lstrip().startswith("#") and not line[0].isspace():
                    key, value = line.split(":", 1)
                    fields[key.strip().lower()] = value.split()
            if fields.get("enabled", ["yes"])[0].lower() != "no" and "uris" in fields:
                yield fields.get("types", []), fields["uris"], fields.get("suites", [])


def apt_mirror(apt_dir: Path = Path("/etc/apt")) -> str:
    """The Debian archive apt uses (RCOMPAT_TIER_MIRROR overrides): the `deb` source whose suites are
    the host's release itself, not its -security or -updates pockets."""
    if os.environ.get("RCOMPAT_TIER_MIRROR"):
        return os.environ["RCOMPAT_TIER_MIRROR"]
    codename = host_codename()
    candidates = []
    for types, uris, suites in _apt_entries(apt_dir):
        if "deb" in types:
            for uri in uris:
                candidates.append((codename not in suites, "security" in uri, uri))
    plain = [uri for not_host, security, uri in sorted(candidates) if not security]
    if not plain:
        raise RootUnavailable(f"no Debian mirror found in {apt_dir}/sources.list(.d) "
                              "(set RCOMPAT_TIER_MIRROR=http://…/debian)")
    return plain[0]


def _rpy2_picks() -> list[str]:
    """The `pip` values of the [[rpy2]] rows: a new pick must build a new wheelhouse; other edits
    of r_rules.toml must not cost a rebuild."""
    rules = Path(__file__).resolve().parent.parent / "rcompat/data/r_rules.toml"
    return re.findall(r'^pip\s*=\s*"([^"]*)"', rules.read_text(), re.M)


def root_key(suite: str) -> str:
    text = "\n".join([BUILDER_VERSION, suite, *PACKAGES, "--", *WHEELS, "--", *_rpy2_picks()])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cached_root_path(suite: str = "auto") -> Path:
    suite = resolve_suite(suite)
    return cache_dir() / f"{suite}-{root_key(suite)}"


def check_can_build(mirror: str, suite: str) -> None:
    """Raise RootUnavailable, saying why, when this machine cannot build a root."""
    if os.geteuid() != 0:
        raise RootUnavailable("not root: debootstrap and chroot need root (run the tier as root)")
    if not shutil.which("debootstrap"):
        raise RootUnavailable("debootstrap is not installed (apt-get install debootstrap)")
    if not shutil.which("unshare"):
        raise RootUnavailable("unshare is not installed (apt-get install util-linux)")
    url = f"{mirror.rstrip('/')}/dists/{suite}/Release"
    for attempt in range(RETRIES):
        try:
            with urllib.request.urlopen(url, timeout=20) as answer:
                answer.read(64)
            return
        except OSError as exc:
            error = exc
            time.sleep(2 * (attempt + 1))
    raise RootUnavailable(f"Debian mirror unreachable: {url}: {error}")


def _retry(what: str, argv: list[str], log, env=None, attempts: int = RETRIES, timeout: float = 1200,
           before_retry=None):
    """Run argv up to `attempts` times (mirrors drop connections); RootError with its last output.
    before_retry() runs before each further attempt (debootstrap needs an empty directory again)."""
    for attempt in range(1, attempts + 1):
        if attempt > 1 and before_retry:
            before_retry()
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=env or _root_env(), timeout=timeout)
        log.write(f"$ {shlex.join(argv)}  (attempt {attempt})\n{proc.stdout}\n")
        log.flush()
        if proc.returncode == 0:
            return proc
        time.sleep(5 * attempt)
    tail = "\n".join(proc.stdout.splitlines()[-15:])
    raise RootError(f"{what} failed {attempts} times (exit {proc.returncode}); last output:\n{tail}")


def _copy_host_certificates(root: Path) -> None:
    """The host's CA bundle goes into the root's local certificate directory, one file per
    certificate (update-ca-certificates links one certificate per file), so pip behind an
    intercepting proxy trusts what the host trusts."""
    bundle = Path("/etc/ssl/certs/ca-certificates.crt")
    if not bundle.is_file():
        return
    target = root / "usr/local/share/ca-certificates/rcompat-host"
    target.mkdir(parents=True, exist_ok=True)
    pems = re.findall(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", bundle.read_text(), re.S)
    for number, pem in enumerate(pems):
        (target / f"host-{number:03d}.crt").write_text(pem + "\n")


def _provision(tmp: Path, log) -> None:
    apt = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-o", "Acquire::Retries=3"]
    _retry("apt-get update", _chroot_argv(tmp, apt + ["update"]), log)
    _retry("apt-get install", _chroot_argv(tmp, apt + ["install", "-y", "--no-install-recommends",
                                                       *PACKAGES]), log)
    _copy_host_certificates(tmp)
    _retry("update-ca-certificates", _chroot_argv(tmp, ["update-ca-certificates"]), log, attempts=1)
    # rpy2_requirement.py with the stdlib-only parts of rcompat it reads, to ask the root's own R
    setup = tmp / "opt/rcompat-setup"
    repo = Path(__file__).resolve().parent.parent
    shutil.copytree(repo / "rcompat", setup / "rcompat", ignore=shutil.ignore_patterns("__pycache__"))
    (setup / "scripts").mkdir(parents=True, exist_ok=True)
    shutil.copy(repo / "scripts/rpy2_requirement.py", setup / "scripts")
    wheels = [w for w in WHEELS if w != "rpy2"]
    build = (f"set -e; python3 -m venv /opt/rcompat-build; "
             f"rpy2=$(python3 /opt/rcompat-setup/scripts/rpy2_requirement.py); "
             f"/opt/rcompat-build/bin/pip wheel -q --retries 5 -w {WHEELHOUSE} \"$rpy2\" "
             f"{' '.join(map(shlex.quote, wheels))}; rm -rf /opt/rcompat-build /opt/rcompat-setup")
    _retry("building the wheelhouse", _chroot_argv(tmp, ["sh", "-c", build]), log)
    _retry("apt-get clean", _chroot_argv(tmp, ["apt-get", "clean"]), log, attempts=1)


def ensure_root(suite: str = "auto", log_path: Path | None = None) -> Path:
    """The cached root for `suite`, built first when missing (minutes; one builder at a time)."""
    if os.geteuid() != 0:   # also with a cached root: entering it needs root
        raise RootUnavailable("not root: debootstrap and chroot need root (run the tier as root)")
    suite = resolve_suite(suite)
    final = cached_root_path(suite)
    if (final / ".rcompat-root-complete").is_file():
        return final
    mirror = apt_mirror()
    check_can_build(mirror, suite)
    final.parent.mkdir(parents=True, exist_ok=True)
    with open(final.parent / f".{final.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second builder waits, then finds the finished root
        if (final / ".rcompat-root-complete").is_file():
            return final
        tmp = Path(tempfile.mkdtemp(prefix=f".build-{final.name}-", dir=final.parent))
        log_path = log_path or final.parent / f"{final.name}.log"
        try:
            with open(log_path, "w") as log:
                _retry("debootstrap", ["debootstrap", "--variant=minbase", suite, str(tmp), mirror], log,
                       before_retry=lambda: (shutil.rmtree(tmp), tmp.mkdir()))
                _provision(tmp, log)
            (tmp / ".rcompat-root-complete").write_text(f"{suite} {mirror} {root_key(suite)}\n")
            if final.exists():  # an incomplete leftover of an older builder without the marker
                shutil.rmtree(final)
            os.rename(tmp, final)
        except BaseException as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(exc, RootError):
                raise RootError(f"building the {suite} root failed (log: {log_path}): {exc}") from None
            raise
    return final


# Exit 125 with a "rcompat-root:" line when the namespace cannot be set up, so run_in_root tells
# "could not enter the root" from the command's own failure.
_NAMESPACE_SCRIPT = r"""
root=$1; shift
m() { mount "$@" || { echo "rcompat-root: cannot mount $*" >&2; exit 125; }; }
m -t proc proc "$root/proc"
m -t sysfs sysfs "$root/sys"
m --bind /dev "$root/dev"
m --bind /dev/pts "$root/dev/pts"
m -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
while [ "$1" != "--" ]; do
    mkdir -p "$root$2" || { echo "rcompat-root: cannot create $2 in the root" >&2; exit 125; }
    m --bind "$1" "$root$2"
    if [ "$3" = ro ]; then m -o remount,bind,ro "$root$2"; fi
    shift 3
done
shift
# Not exec: the first process of a PID namespace ignores signals it has no handler for, so the
# command runs as its child (a signal then reads 128+N, as in any shell) and this shell reaps.
chroot "$root" "$@"
"""


def _chroot_argv(root: Path, argv: list[str], binds: dict | None = None,
                 read_only_binds: dict | None = None) -> list[str]:
    pairs = []
    for (host, inside), mode in [(b, "rw") for b in (binds or {}).items()] + \
                                [(b, "ro") for b in (read_only_binds or {}).items()]:
        if not Path(host).exists():
            raise RootError(f"cannot bind {host} into the root: no such file or directory")
        if not str(inside).startswith("/"):
            raise RootError(f"bind target {inside!r} must be an absolute path inside the root")
        pairs += [str(host), str(inside), mode]
    return ["unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child", "--", "sh", "-c",
            _NAMESPACE_SCRIPT, "rcompat-root", str(root), *pairs, "--", *argv]


ROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _root_env(extra: dict | None = None) -> dict:
    """A clean environment: nothing of the host's (pyenv shims, PIP_*, R_LIBS) leaks in."""
    env = {"PATH": ROOT_PATH, "HOME": "/root", "LANG": "C.UTF-8", "TERM": "dumb"}
    env.update(extra or {})
    return env


def _die_with_parent() -> None:
    """unshare gets SIGKILL when its caller dies, even by a signal Python does not turn into an
    exception (SIGTERM, SIGKILL); --kill-child passes it to the namespace's first process, and the
    kernel then ends every process of that PID namespace."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def run_in_root(root: Path, argv: list[str], env: dict | None = None, timeout: float = 600,
                binds: dict | None = None, input: str | None = None,
                read_only_binds: dict | None = None) -> subprocess.CompletedProcess:
    """Run argv chrooted into `root` with a clean environment (env adds to PATH/HOME/LANG), /proc,
    /sys, /dev, `binds` and `read_only_binds` ({host path: path inside}) mounted for this command only. Text output is
    captured; a command killed by signal N exits 128+N, as in a shell. On timeout every process of
    the command is killed and subprocess.TimeoutExpired raised."""
    root = Path(root)
    if not (root / ".rcompat-root-complete").is_file():
        raise RootError(f"{root} is not a complete rcompat root (its build did not finish)")
    full_env = _root_env(env)
    proc = subprocess.Popen(_chroot_argv(root, list(argv), binds, read_only_binds), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env,
                            start_new_session=True, preexec_fn=_die_with_parent)
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except BaseException:  # timeout, Ctrl-C, SIGTERM turned into an exception: end the whole group
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise
    entry_failure = [line for line in err.splitlines() if line.startswith("rcompat-root: cannot")]
    if proc.returncode == 125 and entry_failure:
        raise RootError(f"cannot enter {root}: {entry_failure[-1][len('rcompat-root: '):]}")
    if proc.returncode != 0 and "unshare: " in err and "Operation not permitted" in err:
        raise RootUnavailable(f"cannot make a mount namespace for {root}: {err.strip()}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "build"
    suite = argv[1] if len(argv) > 1 else "auto"
    try:
        if command == "path":
            print(cached_root_path(suite))
        elif command == "build":
            print(ensure_root(suite))
        elif command == "run":
            proc = run_in_root(ensure_root("auto"), argv[1:])
            sys.stdout.write(proc.stdout)
            sys.stderr.write(proc.stderr)
            return proc.returncode
        else:
            print("usage: debian_root.py build|path [SUITE] | run ARGV...", file=sys.stderr)
            return 2
    except (RootUnavailable, RootError) as exc:
        print(f"debian_root: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Which image of an archive or layout `FILE@TAG` names, matched as Docker and podman match references.

Docker normalises a reference before comparing: `torch` is `docker.io/library/torch:latest`, `me/torch:2`
is `docker.io/me/torch:2` (distribution/reference ParseNormalizedNamed). podman also tries a short name
against `localhost/` (what it tags `podman build -t NAME` with). An OCI layout written by skopeo names an
image by the bare tag after the colon (`oci:DIR:TAG` writes `org.opencontainers.image.ref.name: TAG`), so a
selector equal to a listed name matches too.

Several images and no selector: a usage error listing the tags (exit 2), never a silent pick.
"""
from __future__ import annotations

import platform

from rcompat.documents import type_name
from rcompat.errors import ImageError, UsageError

DOCKER_HUB = "docker.io"
_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "ppc64le": "ppc64le", "s390x": "s390x"}


def normalise(reference: str) -> tuple[str, str, str]:
    """(domain, path, tag-or-digest) of a reference, as Docker spells it in full:
    'torch' -> ('docker.io', 'library/torch', 'latest')."""
    name, digest = reference, ""
    if "@" in name:
        name, _at, digest = name.partition("@")
    tag = ""
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        name, tag = name[:colon], name[colon + 1:]
    first, _slash, rest = name.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        domain, path = first, rest
    else:
        domain, path = DOCKER_HUB, name
    if domain in (DOCKER_HUB, "index.docker.io") and "/" not in path:
        domain, path = DOCKER_HUB, f"library/{path}"
    return domain, path.lower() if domain == DOCKER_HUB else path, digest or tag or "latest"


def _has_domain(reference: str) -> bool:
    first, slash, _rest = reference.split("@")[0].partition("/")
    return bool(slash) and ("." in first or ":" in first or first == "localhost")


def matches(selector: str, listed: str) -> bool:
    """Whether `selector` (what the user wrote after '@') names the image listed as `listed`."""
    if selector == listed:
        return True
    want, have = normalise(selector), normalise(listed)
    if want == have:
        return True
    if _has_domain(selector):
        return False
    # A short name also matches the same path on another registry (podman's localhost/NAME, a mirror).
    short = want[1][len("library/"):] if want[1].startswith("library/") and "/" not in selector.split(":")[0] \
        else want[1]
    return have[2] == want[2] and have[1] in (want[1], short)


def choose(where: str, tagged: list, selector: "str | None"):
    """The (item, tags, notes) that `selector` names; with no selector, the only image, or a UsageError
    listing the tags when there are several."""
    if selector:
        for item, tags in tagged:
            if any(matches(selector, t) for t in tags):
                return item, tags, []
        raise ImageError(f"{where}: no image tagged {selector!r}; its tags: {_listing(tagged)}")
    if len(tagged) > 1:
        raise UsageError(f"{where} holds {len(tagged)} images: name one as {where}@TAG (tags: {_listing(tagged)})")
    item, tags = tagged[0]
    return item, tags, []


def _listing(tagged: list) -> str:
    names = [", ".join(tags) if tags else f"untagged image #{k}" for k, (_item, tags) in enumerate(tagged, 1)]
    return "; ".join(names) or "(none)"


def pick_platform(index: dict, where: str):
    """The linux manifest of this machine's architecture in an image index, and a note saying so."""
    listed = index.get("manifests") or []
    if not isinstance(listed, list):
        raise ImageError(f"{where}: an image index whose 'manifests' is {type_name(listed)}, not a list")
    descriptors = [d for d in listed if isinstance(d, dict)]
    if not descriptors:
        raise ImageError(f"{where}: an image index without manifests")
    arch = _ARCH.get(platform.machine(), platform.machine())
    for d in descriptors:
        p = d.get("platform") or {}
        if not isinstance(p, dict):
            raise ImageError(f"{where}: a manifest descriptor's 'platform' is {type_name(p)}, not an object")
        if p.get("os") == "linux" and p.get("architecture") == arch:
            return d, f"multi-platform image: read the linux/{arch} manifest"
    p = descriptors[0].get("platform") or {}
    return descriptors[0], (f"multi-platform image without linux/{arch}: read the first manifest "
                            f"({p.get('os', '?')}/{p.get('architecture', '?')})")

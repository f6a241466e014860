"""Which image `FILE@TAG` names: references matched as Docker normalises them (distribution/reference's
ParseNormalizedNamed), plus podman's localhost/ for a short name; a layout's damaged files are an error."""
from __future__ import annotations

import pytest

from rcompat.errors import ImageError, UsageError
from rcompat.upgrade_scan.image.manifest import is_image_dir
from rcompat.upgrade_scan.image.refs import choose, matches, normalise


@pytest.mark.parametrize("reference, full", [
    ("torch", ("docker.io", "library/torch", "latest")),
    ("torch:2.4", ("docker.io", "library/torch", "2.4")),
    ("me/torch", ("docker.io", "me/torch", "latest")),
    ("docker.io/library/torch:latest", ("docker.io", "library/torch", "latest")),
    ("index.docker.io/torch", ("docker.io", "library/torch", "latest")),
    ("localhost/new", ("localhost", "new", "latest")),
    ("registry:5000/team/app:1", ("registry:5000", "team/app", "1")),
    ("ghcr.io/org/app@sha256:abc", ("ghcr.io", "org/app", "sha256:abc")),
])
def test_references_normalise_as_docker_spells_them(reference, full):
    assert normalise(reference) == full


@pytest.mark.parametrize("selector, listed, expected", [
    ("torch", "torch:latest", True), ("torch", "docker.io/library/torch:latest", True),
    ("torch:2", "torch:latest", False), ("new", "localhost/new:latest", True),
    ("localhost/new", "localhost/new:latest", True), ("docker.io/library/new", "localhost/new:latest", False),
    ("team/app:1", "registry:5000/team/app:1", True), ("quay.io/team/app:1", "registry:5000/team/app:1", False),
    ("1", "1", True),  # skopeo's oci:DIR:TAG writes the bare tag as ref.name
])
def test_selectors_match_like_docker(selector, listed, expected):
    assert matches(selector, listed) is expected


def test_several_images_without_a_selector_is_a_usage_error_listing_them():
    tagged = [("a", ["localhost/a:1"]), ("b", []), ("c", ["c:2", "c:latest"])]
    with pytest.raises(UsageError, match=r"x.tar holds 3 images: name one as x.tar@TAG \(tags: localhost/a:1; "
                                         r"untagged image #2; c:2, c:latest\)"):
        choose("x.tar", tagged, None)
    assert choose("x.tar", tagged, "c") == ("c", ["c:2", "c:latest"], [])
    with pytest.raises(ImageError, match="no image tagged 'd'"):
        choose("x.tar", tagged, "d")


def test_a_directory_with_a_damaged_layout_is_an_image_not_an_empty_root(tmp_path):
    (tmp_path / "layout").mkdir()
    (tmp_path / "layout/index.json").write_text("{damaged")
    assert is_image_dir(str(tmp_path / "layout"))
    (tmp_path / "root/usr").mkdir(parents=True)
    (tmp_path / "root/manifest.json").write_text('{"name": "an app of the root"}')
    assert not is_image_dir(str(tmp_path / "root"))

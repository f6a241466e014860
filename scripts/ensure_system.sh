#!/usr/bin/env bash
# Install the Debian packages rcompat's set-up and tests need, only when something is missing.
# Quick when all is there: one Rscript call and a few `command -v`.
set -euo pipefail

# r-cran-dplyr: tests/rpkg checks that dplyr verbs work on the R package's results.
APT_PACKAGES=(r-base-core r-base-dev r-cran-reticulate r-cran-jsonlite r-cran-testthat r-cran-dplyr
              abigail-tools binutils gcc libc6-dev make debootstrap)
missing=()
# RCOMPAT_FORCE_SYSTEM_INSTALL=1 takes the install branch even when nothing is missing (to test it).
[ -n "${RCOMPAT_FORCE_SYSTEM_INSTALL:-}" ] && missing+=("(forced)")
for cmd in Rscript R gcc nm readelf abidiff debootstrap; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
done
if command -v Rscript >/dev/null 2>&1; then
  if ! Rscript -e 'q(status = !all(sapply(c("reticulate", "jsonlite", "testthat", "dplyr"), requireNamespace, quietly = TRUE)))' \
       >/dev/null 2>&1; then
    missing+=("R packages reticulate/jsonlite/testthat/dplyr")
  fi
  [ -f "$(R RHOME)/include/R.h" ] || [ -f /usr/share/R/include/R.h ] || missing+=("R headers (r-base-dev)")
fi
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "rcompat set-up: missing ${missing[*]}; installing: ${APT_PACKAGES[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
  command -v sudo >/dev/null 2>&1 || { echo "rcompat set-up: run as root or install: apt-get install ${APT_PACKAGES[*]}" >&2; exit 1; }
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${APT_PACKAGES[@]}"

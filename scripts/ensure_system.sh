#!/usr/bin/env bash
# Install the Debian packages rcompat's set-up and tests need, only when something is missing.
# Quick when all is there: one Rscript call and a few `command -v`.
set -euo pipefail

APT_PACKAGES=(r-base-core r-base-dev r-cran-reticulate r-cran-jsonlite r-cran-testthat
              abigail-tools binutils gcc libc6-dev make debootstrap
              slurmctld slurmd slurm-client munge prometheus-node-exporter chromium)
missing=()
# RCOMPAT_FORCE_SYSTEM_INSTALL=1 takes the install branch even when nothing is missing (to test it).
[ -n "${RCOMPAT_FORCE_SYSTEM_INSTALL:-}" ] && missing+=("(forced)")
for cmd in Rscript R gcc nm readelf abidiff debootstrap; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
done
# The fleet tests' own Slurm (three slurmd, private munged), node_exporter and headless browser.
for cmd in slurmctld slurmd srun munged prometheus-node-exporter chromium; do
  command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || missing+=("$cmd")
done
if command -v Rscript >/dev/null 2>&1; then
  if ! Rscript -e 'q(status = !all(sapply(c("reticulate", "jsonlite", "testthat"), requireNamespace, quietly = TRUE)))' \
       >/dev/null 2>&1; then
    missing+=("R packages reticulate/jsonlite/testthat")
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
# Installing slurmctld, slurmd, munge and prometheus-node-exporter would start their system services;
# the tests start daemons of their own (private config, key, ports) and need none of those. A
# policy-rc.d that says 101 ("action forbidden", Debian's invoke-rc.d policy) keeps them stopped, as in
# a chroot; one already there is left as it is.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  echo "rcompat set-up: holding back service starts during the install (/usr/sbin/policy-rc.d, removed after)" >&2
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod 755 /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${APT_PACKAGES[@]}"

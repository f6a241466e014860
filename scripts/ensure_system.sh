#!/usr/bin/env bash
# Install the Debian packages rcompat's set-up and tests need, only when something is missing.
# Quick when all is there: one Rscript call and a few `command -v`.
#
# A machine where they cannot be installed (not root and no sudo, no mirror reachable, apt locked or
# failing) is not an error of `make test`: this says what could not be installed and why, and what to
# run instead, then exits 0; the tests that need what is missing skip and say so.
set -uo pipefail

APT_PACKAGES=(r-base-core r-base-dev r-cran-reticulate r-cran-jsonlite r-cran-testthat r-cran-dplyr
              abigail-tools binutils gcc libc6-dev make debootstrap locales
              slurmctld slurmd slurm-client munge prometheus-node-exporter chromium
              podman skopeo zstd)
# What each command is for, to say why it is installed.
declare -A WHY=(
  [Rscript]="R, which rcompat probes and the R tests run"
  [R]="R CMD INSTALL of the test fixtures' R packages"
  [gcc]="ELF objects compiled from fixtures/ during the tests"
  [nm]="the reference symbol lister the ELF tests compare with (binutils)"
  [readelf]="the reference ELF reader the ELF tests compare with (binutils)"
  [abidiff]="the reference ABI diff of the abi-diff tests and benchmark (abigail-tools)"
  [debootstrap]="the Debian root of the other release for the R 4.5 tier (tests/tier)"
  [slurmctld]="the fleet tests' own three-node Slurm (tests/fleet)"
  [slurmd]="the fleet tests' own three-node Slurm (tests/fleet)"
  [srun]="the fleet tests' own three-node Slurm (slurm-client)"
  [munged]="Slurm's authentication in the fleet tests (munge)"
  [prometheus-node-exporter]="the textfile collector that scrapes 'fleet --format prometheus'"
  [chromium]="the headless browser that opens the fleet report's HTML page"
  [podman]="images written by the real tools for the upgrade tests (tests/upgrade)"
  [skopeo]="images copied to every layout and compression for the upgrade tests"
  [zstd]="zstd-compressed image layers in the upgrade tests"
)
missing=()
# RCOMPAT_FORCE_SYSTEM_INSTALL=1 takes the install branch even when nothing is missing (to test it).
[ -n "${RCOMPAT_FORCE_SYSTEM_INSTALL:-}" ] && missing+=("(forced)")
for cmd in Rscript R gcc nm readelf abidiff debootstrap slurmctld slurmd srun munged prometheus-node-exporter chromium \
           podman skopeo zstd; do
  command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || missing+=("$cmd (${WHY[$cmd]})")
done
if command -v Rscript >/dev/null 2>&1; then
  if ! Rscript -e 'q(status = !all(sapply(c("reticulate", "jsonlite", "testthat", "dplyr"), requireNamespace, quietly = TRUE)))' \
       >/dev/null 2>&1; then
    missing+=("R packages reticulate/jsonlite/testthat/dplyr (reticulate's probes, the R package's tests)")
  fi
  [ -f "$(R RHOME)/include/R.h" ] || [ -f /usr/share/R/include/R.h ] || missing+=("R headers (r-base-dev: building rpy2 and the fixture packages)")
fi
# locales: the locale sources localedef compiles (tests/hostile builds a Latin-1 locale to test reports there)
[ -f /usr/share/i18n/charmaps/ISO-8859-1.gz ] || missing+=("locale sources (locales: tests/hostile compiles a Latin-1 locale with localedef)")
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
say() { echo "rcompat set-up: $*" >&2; }
cannot() {
  say "could not install the Debian packages: $1"
  say "the tests that need them will skip, saying what is missing; to install them yourself:"
  say "  sudo apt-get install ${APT_PACKAGES[*]}"
  exit 0
}
say "missing:"
for item in "${missing[@]}"; do say "  - $item"; done
say "installing with apt-get: ${APT_PACKAGES[*]}"
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
  else
    cannot "not root, and sudo is not available without a password"
  fi
else
  SUDO=()
fi
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
cleanup=(rm -f "$log")
trap '"${cleanup[@]}"' EXIT
# Installing slurmctld, slurmd, munge and prometheus-node-exporter would start their system services;
# the tests start daemons of their own (private config, key, ports) and need none of those. A
# policy-rc.d that says 101 ("action forbidden", Debian's invoke-rc.d policy) keeps them stopped, as in
# a chroot; one already there is left as it is.
# (RCOMPAT_POLICY_RC_D moves it, for the set-up script's own tests.)
policy=${RCOMPAT_POLICY_RC_D:-/usr/sbin/policy-rc.d}
if [ ! -e "$policy" ]; then
  say "holding back service starts during the install ($policy, removed after)"
  if printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee "$policy" >/dev/null; then
    "${SUDO[@]}" chmod 755 "$policy"
    cleanup=(sh -c "rm -f '$log'; ${SUDO[*]} rm -f '$policy'")
  fi
fi
if ! "${SUDO[@]}" apt-get update -q >"$log" 2>&1; then
  tail -n 5 "$log" >&2
  cannot "'apt-get update' failed (no mirror reachable, or apt is locked by another process: see above)"
fi
if ! "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${APT_PACKAGES[@]}" >"$log" 2>&1; then
  tail -n 5 "$log" >&2
  cannot "'apt-get install' failed (see the lines above)"
fi
say "installed: ${APT_PACKAGES[*]}"

#!/usr/bin/env bash
# Makes the Debian base image the Containerfile's runtime stage starts from,
# docker.io/library/debian:RELEASE-slim, where no registry image can be pulled: a minimal
# Debian made with debootstrap from the Debian mirror, imported under that name, so that
# `podman build` finds it locally and never asks a registry.
#
#   packaging/debian-base.sh [RELEASE]     # default: this machine's release (bookworm, trixie)
set -euo pipefail
release="${1:-$(. /etc/os-release && echo "$VERSION_CODENAME")}"
image="docker.io/library/debian:${release}-slim"
if podman image exists "$image"; then
    exit 0
fi
# A registry that answers saves the debootstrap; one that does not must not hang the build.
if timeout 60 podman pull -q "$image" >/dev/null 2>&1; then
    exit 0
fi
command -v debootstrap >/dev/null || {
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap
}
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase "$release" "$root" http://deb.debian.org/debian >/dev/null
tar -C "$root" -c . | podman import -q - "$image" >/dev/null
echo "made $image with debootstrap"

#!/bin/sh
# Regenerates configure, Makefile.in and the build-aux/ helper scripts.
# Needs autoconf, automake, libtool and pkg-config (for pkg.m4).
set -e
cd "$(dirname "$0")"
for tool in autoreconf aclocal automake libtoolize pkg-config; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "autogen.sh: $tool not found (Debian 12: apt-get install autoconf automake libtool pkg-config)" >&2
        exit 1
    fi
done
mkdir -p build-aux m4
exec autoreconf -fi

#!/usr/bin/env bash
# Installs yb-master, yb-client and yb as systemd services: the binaries in /usr/local/bin, the
# units in /etc/systemd/system, their flags in /etc/yuebing/{master,client}.env (kept if present),
# a system user `yuebing` and the docs. Then: edit the env files, and
#   systemctl enable --now yb-master     (and/or yb-client)
# Usage: scripts/install_systemd.sh [BUILD_DIR]   (default: build). Needs root.
# DESTDIR=/some/root installs under that root instead (no user, no systemctl): what the tests do.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$here/build}"
root="${DESTDIR:-}"
for b in yb-master yb-client yb; do
  [ -x "$build/bin/$b" ] || { echo "no $build/bin/$b: build first (see README.md)" >&2; exit 1; }
done
install -d "$root/usr/local/bin" "$root/etc/systemd/system" "$root/etc/yuebing" "$root/usr/local/share/doc/yuebing"
for b in yb-master yb-client yb; do install -m 0755 "$build/bin/$b" "$root/usr/local/bin/$b"; done
for u in yb-master.service yb-client.service; do install -m 0644 "$here/deploy/systemd/$u" "$root/etc/systemd/system/$u"; done
install -m 0644 "$here/docs/operations.md" "$here/docs/security.md" "$root/usr/local/share/doc/yuebing/"
for e in master.env client.env; do
  # An operator's flags are never overwritten.
  [ -e "$root/etc/yuebing/$e" ] || install -m 0640 "$here/deploy/systemd/$e" "$root/etc/yuebing/$e"
done
if [ -z "$root" ]; then
  id -u yuebing >/dev/null 2>&1 || useradd --system --home-dir /var/lib/yuebing --shell /usr/sbin/nologin yuebing
  chgrp yuebing /etc/yuebing/master.env /etc/yuebing/client.env
  if [ -d /run/systemd/system ]; then systemctl daemon-reload; fi
fi
echo "installed; edit ${root}/etc/yuebing/master.env and client.env, then: systemctl enable --now yb-master yb-client"

#!/usr/bin/env bash
# Real MySQL 9.7 and a current kubectl from Debian's `sid` suite, unpacked, never installed into
# the system (research/feasibility.md §11 and §12). Sourced by scripts/provision.sh; idempotent.
#
# The mirror is the one the machine's own apt sources name (no host name lives in this
# repository). A private apt configuration lists `sid` from that mirror; the packages are
# downloaded and extracted with `dpkg-deb -x` into one folder per tool under the cache folder
# (outside the build, so `cargo clean` keeps it): $BLOODRAVEN_CACHE, default
# ${XDG_CACHE_HOME:-~/.cache}/bloodraven.
#
# MySQL's programs need sid's glibc, so each is run through the unpacked loader. Wrapper
# scripts in $mysql_dir/bin `exec` that loader, so the PID a caller spawns is mysqld's own
# (SIGKILL/SIGSTOP reach the server).

sid_cache="${BLOODRAVEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bloodraven}"
mkdir -p "$sid_cache"

_sid_log() { printf '== %s\n' "$*" >&2; }
_sid_fail() { printf 'provision-sid: %s\n' "$*" >&2; return 1; }

# The first Debian mirror URI of the machine's apt sources (deb822 or one-line format).
_sid_mirror() {
  local uri=""
  if [ -r /etc/apt/sources.list.d/debian.sources ]; then
    uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' \
      /etc/apt/sources.list.d/debian.sources)
  fi
  if [ -z "$uri" ] && [ -r /etc/apt/sources.list ]; then
    uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/ && $i !~ /security/) { print $i; exit } }' \
      /etc/apt/sources.list)
  fi
  printf '%s' "$uri"
}

# Private apt configuration for sid; prints the apt-get options that select it.
_sid_apt_opts() {
  local dir="$sid_cache/apt-sid"
  printf -- '-o Dir::Etc::SourceList=%s -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=%s -o Dir::Cache::Archives=%s -o Debug::NoLocking=1 -o APT::Sandbox::User=root' \
    "$dir/sources.list" "$dir/lists" "$dir/archives"
}

_sid_apt_update() {
  local dir="$sid_cache/apt-sid" mirror
  [ -f "$dir/lists/.updated" ] && return 0
  mirror=$(_sid_mirror)
  [ -n "$mirror" ] || { _sid_fail "no Debian mirror found in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list"; return 1; }
  mkdir -p "$dir/lists/partial" "$dir/archives/partial"
  printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s sid main\n' "$mirror" >"$dir/sources.list"
  _sid_log "apt-get update (private sid list from the machine's mirror)"
  # shellcheck disable=SC2046
  apt-get $(_sid_apt_opts) update -qq >/dev/null || { _sid_fail "apt-get update of the sid list failed"; return 1; }
  touch "$dir/lists/.updated"
}

# Downloads packages (name or name/suite) from sid and extracts them into $1.
_sid_extract() {
  local into=$1; shift
  local tmp
  tmp=$(mktemp -d)
  # shellcheck disable=SC2046
  (cd "$tmp" && apt-get $(_sid_apt_opts) download "$@" >/dev/null) \
    || { rm -rf "$tmp"; _sid_fail "apt-get download $* from sid failed"; return 1; }
  mkdir -p "$into"
  local deb
  for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$into"; done
  rm -rf "$tmp"
}

mysql_packages=(mysql-server-core mysql-client-core libc6 libstdc++6 libgcc-s1 libaio1t64 libicu78
  libprotobuf-lite32t64 libprotobuf32t64 libssl3t64 libzstd1 zlib1g liblz4-1 libnuma1 libtirpc3t64
  libmecab2 libfido2-1 libcurl4t64 libgoogle-perftools4t64 libtcmalloc-minimal4t64 libunwind8
  libedit2 libbsd0 libmd0 libcbor0.10 libudev1 libgssapi-krb5-2 libkrb5-3 libk5crypto3
  libkrb5support0 libcom-err2 libkeyutils1)

mysql_dir="$sid_cache/mysql-sid"
mysql_root="$mysql_dir/root"
if [ ! -f "$mysql_dir/.complete" ]; then
  _sid_apt_update || return 1 2>/dev/null || exit 1
  _sid_log "fetching MySQL server and client tools from sid into $mysql_dir"
  rm -rf "$mysql_dir"
  _sid_extract "$mysql_root" "${mysql_packages[@]}" || return 1 2>/dev/null || exit 1
  mkdir -p "$mysql_dir/bin"
  loader="$mysql_root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
  [ -x "$loader" ] || [ -f "$loader" ] || { _sid_fail "the unpacked loader $loader is missing"; return 1 2>/dev/null || exit 1; }
  libs="$mysql_root/usr/lib/x86_64-linux-gnu:$mysql_root/lib/x86_64-linux-gnu"
  for program in sbin/mysqld bin/mysql bin/mysqlbinlog bin/mysqldump bin/mysqladmin; do
    name=${program#*/}
    [ -f "$mysql_root/usr/$program" ] || { _sid_fail "the sid packages carry no usr/$program"; return 1 2>/dev/null || exit 1; }
    cat >"$mysql_dir/bin/$name" <<EOF
#!/bin/sh
# Runs sid's $name through the unpacked loader (scripts/provision-sid.sh).
exec "$loader" --library-path "$libs" "$mysql_root/usr/$program" "\$@"
EOF
    chmod +x "$mysql_dir/bin/$name"
  done
  "$mysql_dir/bin/mysqld" --version >"$mysql_dir/version" \
    || { _sid_fail "the unpacked mysqld does not run"; return 1 2>/dev/null || exit 1; }
  touch "$mysql_dir/.complete"
fi

kubectl_dir="$sid_cache/kubectl-sid"
if [ ! -f "$kubectl_dir/.complete" ]; then
  _sid_apt_update || return 1 2>/dev/null || exit 1
  _sid_log "fetching kubectl from sid into $kubectl_dir"
  rm -rf "$kubectl_dir"
  # The image's own kubectl package has a higher epoch: name the suite.
  _sid_extract "$kubectl_dir" kubectl/sid || return 1 2>/dev/null || exit 1
  "$kubectl_dir/usr/bin/kubectl" version --client >"$kubectl_dir/version" 2>/dev/null \
    || { _sid_fail "the unpacked kubectl does not run"; return 1 2>/dev/null || exit 1; }
  touch "$kubectl_dir/.complete"
fi

export BLOODRAVEN_MYSQL_ROOT="$mysql_root"
export BLOODRAVEN_MYSQLD="$mysql_dir/bin/mysqld"
export BLOODRAVEN_MYSQL="$mysql_dir/bin/mysql"
export BLOODRAVEN_MYSQLBINLOG="$mysql_dir/bin/mysqlbinlog"
export BLOODRAVEN_MYSQLDUMP="$mysql_dir/bin/mysqldump"
export BLOODRAVEN_MYSQLADMIN="$mysql_dir/bin/mysqladmin"
export BLOODRAVEN_MYSQL_BASEDIR="$mysql_root/usr"
export BLOODRAVEN_MYSQL_LC_MESSAGES_DIR="$mysql_root/usr/share/mysql"
export BLOODRAVEN_MYSQL_PLUGIN_DIR="$mysql_root/usr/lib/mysql/plugin"
export BLOODRAVEN_KUBECTL_1_36="$kubectl_dir/usr/bin/kubectl"

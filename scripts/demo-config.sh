#!/usr/bin/env bash
# demo-config.sh - points the user's gpupool CLI at the demo's gpupoold
# (scripts/demo.sh), and back when the demo stops.
#
# The demo's gpupoold listens on a port of its own choosing, so a new
# shell's `gpupool jobs` would try the built-in default and find nothing.
# This writes the CLI's config file (docs/cli.md "Configuration"):
# $XDG_CONFIG_HOME/gpupool/config, else ~/.config/gpupool/config.
#
#   demo-config.sh write SERVER TOKEN_FILE
#       server = SERVER and token_file = TOKEN_FILE (the admin token stays
#       in its own 0600 file, not copied).  A config already there that
#       the demo did not write is kept first as config.before-demo (or
#       config.before-demo.SECONDS when that name is taken; a demo config
#       left by a demo that did not stop cleanly carries its copy over).  Prints the
#       config's path and, on a second line, the kept copy's ("" if none).
#   demo-config.sh restore
#       when the config is still the demo's: puts the copy it kept back (its
#       name is on the demo config's second line), or removes the config
#       when there was none.  A config the user changed meanwhile is left
#       as it is.
set -euo pipefail

MARK="# written by gpupool's demo (scripts/demo.sh); put back when the demo stops"
DIR="${XDG_CONFIG_HOME:-${HOME:?HOME is not set}/.config}/gpupool"
CONFIG="$DIR/config"
KEPT="$DIR/config.before-demo"

ours() { [[ -f "$CONFIG" ]] && [[ "$(head -n 1 "$CONFIG")" == "$MARK" ]]; }
kept_copy() { sed -n '2s/^# kept: //p' "$CONFIG"; }

write() {
    local server=$1 token_file=$2 kept=""
    mkdir -p "$DIR"
    chmod 700 "$DIR"
    if ours; then  # a demo that did not stop cleanly: what it kept is still to be put back
        kept=$(kept_copy)
    elif [[ -e "$CONFIG" ]]; then
        kept=$KEPT
        [[ -e "$kept" ]] && kept="$KEPT.$(date +%s)"
        cp -p "$CONFIG" "$kept"
    fi
    local tmp
    tmp=$(mktemp "$DIR/config.XXXXXX")
    printf '%s\n# kept: %s\nserver = %s\ntoken_file = %s\n' "$MARK" "$kept" "$server" "$token_file" > "$tmp"
    chmod 600 "$tmp"
    mv -f "$tmp" "$CONFIG"
    printf '%s\n%s\n' "$CONFIG" "$kept"
}

restore() {
    ours || return 0
    local kept
    kept=$(kept_copy)
    if [[ -n "$kept" && -e "$kept" ]]; then
        mv -f "$kept" "$CONFIG"
    else
        rm -f "$CONFIG"
    fi
}

case "${1:-}" in
write) [[ $# == 3 ]] || { echo "usage: demo-config.sh write SERVER TOKEN_FILE" >&2; exit 2; }; write "$2" "$3" ;;
restore) restore ;;
*) echo "usage: demo-config.sh write SERVER TOKEN_FILE | restore" >&2; exit 2 ;;
esac

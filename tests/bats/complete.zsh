#!/usr/bin/env zsh
# Complete a command line in a real interactive zsh (compinit, ZLE) and print
# the line as completion left it.  Used by tests/bats/install.bats.
#   zsh complete.zsh FPATH_DIR 'chidori run --jo'
# Synchronised on output markers, not on sleeps: ZLE handles the keys in
# order, so the line is printed only after the completion has run.
zmodload zsh/zpty || exit 1
zpty z 'zsh -f -i' || exit 1
zpty -w z "PS1='> '; unsetopt zle_bracketed_paste; setopt nobeep; fpath=(${(q)1} \$fpath);" \
  "autoload -Uz compinit; compinit -u -D; bindkey '^I' complete-word; print -r -- RE''ADY"
zpty -r z line '*READY*' || exit 1
# Tab completes; then Ctrl-A / Ctrl-E wrap the line in a print with markers.
zpty -w -n z "$2"$'\t'$'\C-a'"print -r -- '<''<' "$'\C-e'" '>''>'"$'\n'
zpty -r z out '*<<*>>*' || exit 1
out=${out##*<<}
print -r -- "${${out%%>>*}## }"
zpty -d z

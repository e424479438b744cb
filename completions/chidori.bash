# bash completion for chidori                              -*- shell-script -*-
#
# Commands and options are read from the binary's own help (`chidori --help`,
# `chidori COMMAND --help`), so the completion follows the binary it runs
# with and never lists an option that binary does not have.  An option's
# value is completed from the placeholder its help shows: FILE and JOURNAL
# are files, DIR a directory, AGENT a .js/.mjs/.cjs/.ts file, PROGRAM a
# command (after `launch --`); JSON, N, MS, SIZE, ... get no suggestions.
#
# Installed as share/bash-completion/completions/chidori; needs no other
# package (bash-completion's helpers are not used).

# The options of one command, one "OPTION PLACEHOLDER" per line (placeholder
# "-" for a flag, "=" appended to an option spelled --opt=VALUE).
_chidori_options() {
  "$1" "$2" --help 2>/dev/null | awk '
    /^  (-[a-zA-Z], )?--[a-z]/ {
      sub(/^  (-[a-zA-Z], )?/, "")
      sub(/   *.*/, "")     # the description starts after two spaces
      n = split($0, t, /[ \t]+/)
      for (i = 1; i <= n; i++) {
        if (t[i] == "/") continue
        if (t[i] !~ /^--[a-z]/) break
        name = t[i]; arg = "-"
        if (index(name, "=")) { name = substr(name, 1, index(name, "=")); arg = "VALUE" }
        else if (i < n && t[i + 1] ~ /^[A-Z][A-Z0-9_]*([^a-z]|$)/) arg = t[i + 1]
        if (!printed[name]++) print name, arg
      }
    }
    /^Usage:/ {   # options only the usage line shows, e.g. doctor --require
      n = split($0, t, /[][ \t|]+/)
      for (i = 1; i <= n; i++)
        if (t[i] ~ /^--[a-z]/) {
          arg = (i < n && t[i + 1] ~ /^[A-Z][A-Z0-9_]*([^a-z]|$)/) ? t[i + 1] : "-"
          usage[++u] = t[i]; uarg[u] = arg
        }
    }
    END { for (i = 1; i <= u; i++) if (!printed[usage[i]]++) print usage[i], uarg[i] }'
}

# The commands, from the "Commands:" part of `chidori --help`.
_chidori_commands() {
  "$1" --help 2>/dev/null | awk '/^Commands:/ { on = 1; next } on && /^$/ { exit } on && /^  [a-z]/ { print $1 }'
}

_chidori_agent_files() {
  local cur=$1 f
  compopt -o filenames 2>/dev/null || :
  while IFS= read -r f; do
    if [[ -d $f ]]; then
      COMPREPLY+=("$f")
    else
      case $f in *.js|*.mjs|*.cjs|*.ts|*.mts|*.cts|*.jsx|*.tsx) COMPREPLY+=("$f") ;; esac
    fi
  done < <(compgen -f -- "$cur")
}

_chidori_value() { # PLACEHOLDER CUR
  case $1 in
    FILE*|JOURNAL*|SRC*) compopt -o filenames 2>/dev/null || :; COMPREPLY=($(compgen -f -- "$2")) ;;
    DIR*) compopt -o filenames 2>/dev/null || :; COMPREPLY=($(compgen -d -- "$2")) ;;
    AGENT*) _chidori_agent_files "$2" ;;
    *) COMPREPLY=() ;;
  esac
}

_chidori() {
  local bin=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]} prev=""
  ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
  [[ $bin == "~/"* ]] && bin=$HOME/${bin#\~/}
  command -v -- "$bin" >/dev/null 2>&1 || return 0
  COMPREPLY=()

  if ((COMP_CWORD == 1)); then
    COMPREPLY=($(compgen -W "$(_chidori_commands "$bin") --help --version" -- "$cur"))
    return 0
  fi
  local cmd=${COMP_WORDS[1]} i
  # launch: after `--`, the program and its arguments.
  if [[ $cmd == launch ]]; then
    for ((i = 2; i < COMP_CWORD; i++)); do
      if [[ ${COMP_WORDS[i]} == -- ]]; then
        if ((COMP_CWORD == i + 1)); then
          COMPREPLY=($(compgen -c -- "$cur"))
        else
          compopt -o filenames 2>/dev/null || :
          COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return 0
      fi
    done
  fi

  local opts name arg
  opts=$(_chidori_options "$bin" "$cmd")
  # The value of the option before the cursor.
  if [[ $prev == --* && $cur != -* ]]; then
    while read -r name arg; do
      if [[ $name == "$prev" ]]; then
        [[ $arg != - ]] && { _chidori_value "$arg" "$cur"; return 0; }
        break
      fi
    done <<<"$opts"
  fi
  if [[ $cur == -* ]]; then
    local words=()
    while read -r name arg; do words+=("$name"); done <<<"$opts"
    COMPREPLY=($(compgen -W "${words[*]}" -- "$cur"))
    [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null || :
    return 0
  fi
  case $cmd in
    run) _chidori_agent_files "$cur" ;;
    replay) compopt -o filenames 2>/dev/null || :; COMPREPLY=($(compgen -f -- "$cur")) ;;
    launch) COMPREPLY=($(compgen -W "--" -- "$cur")) ;;
  esac
  return 0
}

complete -F _chidori chidori

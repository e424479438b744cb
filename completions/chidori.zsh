#compdef chidori
#
# zsh completion for chidori.  As in the bash completion (chidori.bash), the
# commands and options come from the binary's own help (`chidori --help`,
# `chidori COMMAND --help`), so they follow the binary that is run; an
# option's value is completed from the placeholder its help shows (FILE,
# JOURNAL, SRC: files; DIR: directories; AGENT: .js/.mjs/.cjs/.ts files;
# after `launch --`: a command and its arguments).
#
# Installed as share/zsh/site-functions/_chidori.

# The options of one command: "OPTION<TAB>PLACEHOLDER<TAB>DESCRIPTION" lines
# (placeholder "-" for a flag; "--opt=" for an option spelled --opt=VALUE).
_chidori_options() {
  "$1" "$2" --help 2>/dev/null | awk '
    function desc_of(line,    i) {
      i = match(line, /   */)
      return i ? substr(line, i + RLENGTH) : ""
    }
    /^  (-[a-zA-Z], )?--[a-z]/ {
      line = $0
      sub(/^  (-[a-zA-Z], )?/, "", line)
      d = desc_of(line)
      head = line
      sub(/   *.*/, "", head)
      n = split(head, t, /[ \t]+/)
      for (i = 1; i <= n; i++) {
        if (t[i] == "/") continue
        if (t[i] !~ /^--[a-z]/) break
        name = t[i]; arg = "-"
        if (index(name, "=")) { name = substr(name, 1, index(name, "=")); arg = "VALUE" }
        else if (i < n && t[i + 1] ~ /^[A-Z][A-Z0-9_]*([^a-z]|$)/) arg = t[i + 1]
        if (!printed[name]++) print name "\t" arg "\t" d
      }
    }
    /^Usage:/ {
      n = split($0, t, /[][ \t|]+/)
      for (i = 1; i <= n; i++)
        if (t[i] ~ /^--[a-z]/) {
          usage[++u] = t[i]
          uarg[u] = (i < n && t[i + 1] ~ /^[A-Z][A-Z0-9_]*([^a-z]|$)/) ? t[i + 1] : "-"
        }
    }
    END { for (i = 1; i <= u; i++) if (!printed[usage[i]]++) print usage[i] "\t" uarg[i] "\t" }'
}

# _arguments specs for one command, one per line.
_chidori_specs() {
  local name arg desc
  _chidori_options "$1" "$2" | while IFS=$'\t' read -r name arg desc; do
    desc=${desc//[\[\]:\\]/}
    case $arg in
      -) print -r -- "${name}[${desc}]" ;;
      FILE*|JOURNAL*|SRC*) print -r -- "${name}[${desc}]:${arg//[\[\]:]/}:_files" ;;
      DIR*) print -r -- "${name}[${desc}]:${arg}:_files -/" ;;
      *) print -r -- "${name}[${desc}]:${arg//[\[\]:]/}: " ;;
    esac
  done
}

_chidori_commands() {
  "$1" --help 2>/dev/null | awk '
    /^Commands:/ { on = 1; next }
    on && /^$/ { exit }
    on && /^  [a-z]/ {
      line = $0; sub(/^  /, "", line)
      i = match(line, /   */)
      print $1 ":" (i ? substr(line, i + RLENGTH) : "")
    }'
}

_chidori() {
  local bin=${~words[1]}
  (( $+commands[$bin] )) || [[ -x $bin ]] || return 1
  if (( CURRENT == 2 )); then
    local -a cmds
    cmds=(${(f)"$(_chidori_commands $bin)"})
    _describe -t commands 'chidori command' cmds
    _arguments '--help[show the commands]' '--version[print the version]'
    return
  fi
  local cmd=${words[2]} dd=${words[(I)--]}
  if [[ $cmd == launch ]] && (( dd > 2 && dd < CURRENT )); then
    shift $dd words
    (( CURRENT -= dd ))
    _normal
    return
  fi
  local -a specs
  specs=(${(f)"$(_chidori_specs $bin $cmd)"})
  shift words
  (( CURRENT-- ))
  case $cmd in
    run) _arguments -S $specs '1:agent:_files -g "*.(js|mjs|cjs|ts|mts|cts|jsx|tsx)(-.)"' ;;
    replay) _arguments -S $specs '1:journal:_files' ;;
    *) _arguments -S $specs ;;
  esac
}

# Loaded as a completion function (compinit) the file's body is _chidori's;
# sourced elsewhere (tests) it only defines the functions.
(( $+functions[_arguments] )) && _chidori "$@"

# Test evaluator: hangs, ignoring SIGTERM, with a background child that
# hangs too. It writes "<its pid> <the child's pid>" to the file named by
# PIDFILE=<path> in the program (its pid is also its process group id).
pidfile=$(sed -n 's/.*PIDFILE=\(.*\)$/\1/p' "$1" | head -n 1)
trap '' TERM
sleep 1000 &
echo "$$ $!" > "$pidfile.tmp" && mv "$pidfile.tmp" "$pidfile"
sleep 1000

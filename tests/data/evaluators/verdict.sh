# Test evaluator: prints the JSON held in the program file itself, so that a
# test can hand the evaluation pipeline any output (a kernel harness's
# verdict, a score without a fitness, ...).
cat "$1"

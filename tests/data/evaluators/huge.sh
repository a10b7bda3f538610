# Test evaluator: exits 0 after printing more than kevolve reads (4 MiB).
head -c 5000000 /dev/zero | tr '\0' 'x'
echo

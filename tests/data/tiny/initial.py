# A tiny program for end-to-end tests: its evaluator scores the parameters
# below deterministically (best at A=7, B=2, C=5), so runs are reproducible.
# EVOLVE-BLOCK-START
A = 1  # kevolve: tune 1 2 3 4 5 6 7 8
B = 8  # kevolve: tune 1 2 3 4 5 6 7 8
C = 3  # kevolve: tune 1 2 3 4 5 6 7 8
# EVOLVE-BLOCK-END
print(A, B, C)

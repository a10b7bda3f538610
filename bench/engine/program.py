# Program for the engine overhead benchmark: many tunable values and lines, so
# the built-in mutators keep producing new children.
# EVOLVE-BLOCK-START
P0 = 1  # kevolve: tune range 1 64
P1 = 1  # kevolve: tune range 1 64
P2 = 1  # kevolve: tune range 1 64
P3 = 1  # kevolve: tune range 1 64
P4 = 1  # kevolve: tune range 1 64
P5 = 1  # kevolve: tune range 1 64
x = P0 + P1
y = P2 * P3
z = P4 - P5
w = x + y + z
# EVOLVE-BLOCK-END
print(w)

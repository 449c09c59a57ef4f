"""The machine's layer plan: the first layer of each stage."""
L_IN, L_ROM, L_STATUS, L_REG, L_EXEC = 0, 1, 2, 3, 4

print("eleven-bench: nothing here yet")

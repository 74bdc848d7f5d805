print("eleven-server: nothing here yet")

print("eleven-relay: nothing here yet")

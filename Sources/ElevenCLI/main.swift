print("eleven: nothing here yet")

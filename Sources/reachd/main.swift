print("reachd: not yet")

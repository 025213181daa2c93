VERSION = "1"

def labels(name):
    return {"app": name}

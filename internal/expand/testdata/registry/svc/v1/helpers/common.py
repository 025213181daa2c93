def labels(name):
    return {"app": name}

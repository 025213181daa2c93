def GenerateConfig(context):
    s = "x" * 4000000
    return ("%s" * 3000) % tuple([s] * 3000)

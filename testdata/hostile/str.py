def GenerateConfig(context):
    s = "x" * 4000000
    return str([s] * 3000)

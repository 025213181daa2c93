def GenerateConfig(context):
    return str(int("9" * 4000000))

def GenerateConfig(context):
    return 42

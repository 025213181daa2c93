def GenerateConfig(context):
    return ("x" * 4000000).join([str(i) for i in range(262144)])

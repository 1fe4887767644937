"""The CloudProvider port, the instance-type model and the packaged EC2 catalog.

Adapters: ``simulated`` (the default, virtual-time cloud) and ``aws`` (EC2 through boto3).
"""

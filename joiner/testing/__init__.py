"""Test builders (``make_pod``, ``make_nodepool``, ``make_instance_type``) shared by the tests."""

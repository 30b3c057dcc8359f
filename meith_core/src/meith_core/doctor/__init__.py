"""`meith doctor`: the installation checked, and the escape corpus run against a live runtime."""

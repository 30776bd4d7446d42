"""roller.view"""
